#!/usr/bin/env python3
"""Build ffmpeg-faq-qa (BEIR layout) from Debian's ffmpeg-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x ffmpeg-doc_*.deb PKGROOT`), the
folder holding usr/share/doc/ffmpeg/manual/.  OUTDIR defaults to the folder this script
is in.  Standard library only (plus ../docsqa_common.py); the output is deterministic.

Queries: every <h3> entry of the two FAQ pages, faq.html ("FFmpeg FAQ") and
mailing-list-faq.html ("FFmpeg Mailing List FAQ"), whose text ends with "?"; the
section number ("3.2 ") is dropped.
Answer:  the blocks under that entry (its <h4> subsections included) up to the next
<h2>/<h3>, kept whole.
Distractors: every section of every other HTML page of the manual (the tables of
contents, heading anchors and the "generated using makeinfo" line dropped; the
ffmpeg-all, ffplay-all and ffprobe-all pages left out, as they concatenate the other
pages), packed as the docs-qa recipe says; at most 4,000 are kept.
Titles are the page titles (<title>) only.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CAP = 4000
FAQS = ("faq.html", "mailing-list-faq.html")
ALL = ("ffmpeg-all.html", "ffplay-all.html", "ffprobe-all.html")
NUMBER = re.compile(r"^\d+(\.\d+)* ")
FOOTER = "This document was generated using"


def skip(tag, a):
    cls = (a.get("class") or "").split()
    return (
        tag in ("script", "style")
        or (tag == "span" and "pull-right" in cls)
        or (tag == "div" and ("contents" in cls or "Contents_element" in cls or "shortcontents" in cls))
    )


def events_of(path):
    p = c.parse_html(path, None, skip)
    events = [ev for ev in p.events if not (ev[0] == "b" and ev[2].startswith(FOOTER))]
    return c.page_title(p), events


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(root, "usr", "share", "doc", "ffmpeg", "manual")
    found = c.Queries()
    for faq in FAQS:
        title, events = events_of(os.path.join(docdir, faq))
        entries = []
        for ev in events:
            if ev[0] == "h" and ev[1] == 3:
                entries.append([NUMBER.sub("", ev[2]), []])
            elif ev[0] == "h" and ev[1] < 3:
                entries.append(None)
            elif ev[0] == "b" and entries and entries[-1] is not None:
                entries[-1][1].append(ev[2])
        found.add_entries(faq, title, entries)

    pages = c.html_pages(docdir, exclude=set(FAQS) | set(ALL))
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        title, events = events_of(os.path.join(docdir, rel))
        dis.add_events(title, rel, events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "ffmpeg-doc", "copyright"),
        len(pages),
        CAP,
    )


if __name__ == "__main__":
    main()
