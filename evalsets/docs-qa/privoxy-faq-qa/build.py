#!/usr/bin/env python3
"""Build privoxy-faq-qa (BEIR layout) from Debian's privoxy package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x privoxy_*.deb PKGROOT`), the folder
holding usr/share/doc/privoxy/.  OUTDIR defaults to the folder this script is in.
Standard library only (plus ../docsqa_common.py); the output is deterministic.

Queries: every section heading (<h2> and below) of the Privoxy FAQ's pages
(usr/share/doc/privoxy/faq/*.html, DocBook HTML; the index page left out) whose heading
ends with "?"; the section number ("3.12. ") is dropped.
Answer:  the blocks under that heading up to the next heading of any level, kept whole.
Distractors: every section of the other manuals of the package: the User Manual
(user-manual/*.html), the Developer Manual (developer-manual/*.html) and the manual page
(man-page/*.html), packed as the docs-qa recipe says.  Navigation headers and footers and
tables of contents are dropped.  At most 2,000 - (number of queries) distractors are
kept, so the corpus is at most 2,000 documents.
Titles are the page titles (<title>, e.g. "Configuration", "The Main Configuration File").
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CORPUS_CAP = 2000
NUMBER = re.compile(r"^\d+(\.\d+)*\.? ")
DROPPED = {"navheader", "navfooter", "toc"}
MANUALS = ("user-manual", "developer-manual", "man-page")


def skip(tag, a):
    cls = set((a.get("class") or "").lower().split())
    return tag in ("script", "style") or (tag == "div" and bool(cls & DROPPED))


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(root, "usr", "share", "doc", "privoxy")
    faq_pages = c.html_pages(os.path.join(docdir, "faq"), exclude={"index.html"})
    found = c.Queries()
    for rel in faq_pages:
        p = c.parse_html(os.path.join(docdir, "faq", rel), None, skip)
        entries = c.heading_entries(p.events, lambda h: NUMBER.sub("", h))
        found.add_entries("faq/" + rel, c.page_title(p), entries)

    pages = [m + "/" + rel for m in MANUALS for rel in c.html_pages(os.path.join(docdir, m))]
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(docdir, rel), None, skip)
        dis.add_events(c.page_title(p), rel, p.events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(docdir, "copyright"),
        len(faq_pages) + len(pages),
        CORPUS_CAP - len(found.queries),
    )


if __name__ == "__main__":
    main()
