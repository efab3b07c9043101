#!/usr/bin/env python3
"""Build sqlite-faq-qa (BEIR layout) from Debian's sqlite3-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x sqlite3-doc_*.deb PKGROOT`), the
folder holding usr/share/doc/sqlite3/.  OUTDIR defaults to the folder this script is
in.  Standard library only (plus ../docsqa_common.py); the output is deterministic.

Queries: every entry of faq.html ("(N) question" in bold, N dropped) whose text ends
with "?".
Answer:  the blocks under that entry, up to the next entry or the page's
"This page last modified" line, kept whole.
Distractors: every section of every other HTML page of the package (the site menu,
scripts and the "last modified" line dropped), packed as the docs-qa recipe says;
at most 4,000 are kept (random.Random(0).sample, kept in document order).
Titles are the page titles (<title>) only.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

PKG = "sqlite3"
CAP = 4000
QUESTION = re.compile(r"^\((\d+)\) (.+)$", re.S)
FOOTER = "This page last modified"


def skip(tag, a):
    cls = (a.get("class") or "").split()
    return tag in ("script", "style", "form") or (tag == "div" and "nosearch" in cls)


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(root, "usr", "share", "doc", PKG)
    found = c.Queries()
    p = c.parse_html(os.path.join(docdir, "faq.html"), None, skip)
    title = c.page_title(p)
    entries = []
    for ev in p.events:
        if ev[0] == "h":
            continue
        text = ev[2]
        m = QUESTION.match(text)
        if m and ev[1] == "p":
            entries.append([c.WS.sub(" ", m.group(2)).strip(), []])
        elif text.startswith(FOOTER):
            entries.append(None)
        elif entries and entries[-1] is not None:
            entries[-1][1].append(text)
    found.add_entries("faq.html", title, entries)

    pages = c.html_pages(docdir, exclude={"faq.html"})
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(docdir, rel), None, skip)
        events = [ev for ev in p.events if not (ev[0] == "b" and ev[2].startswith(FOOTER))]
        dis.add_events(c.page_title(p), rel, events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "sqlite3-doc", "copyright"),
        len(pages),
        CAP,
    )


if __name__ == "__main__":
    main()
