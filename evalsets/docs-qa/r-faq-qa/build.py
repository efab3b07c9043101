#!/usr/bin/env python3
"""Build r-faq-qa (BEIR layout) from Debian's r-doc-html package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x r-doc-html_*.deb PKGROOT`), the folder
holding usr/share/R/doc/manual/.  OUTDIR defaults to the folder this script is in.
Standard library only (plus ../docsqa_common.py); the output is deterministic.

Queries: every section and subsection (<h3>, <h4>) of the R FAQ (R-FAQ.html) whose
heading ends with "?"; the section number ("7.31 ") is dropped.
Answer:  the blocks under that heading up to the next <h2>/<h3>/<h4>, kept whole.
Distractors: every section of the other six R manuals of the package (An Introduction
to R, R Data Import/Export, R Installation and Administration, Writing R Extensions,
R Language Definition, R Internals; navigation headers and tables of contents
dropped), packed as the docs-qa recipe says; at most 4,000 are kept.
Titles are the page titles (<title>, e.g. "R FAQ", "Writing R Extensions") only.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CAP = 4000
FAQ = "R-FAQ.html"
NUMBER = re.compile(r"^\d+(\.\d+)* ")


def skip(tag, a):
    cls = (a.get("class") or "").split()
    return (
        tag in ("script", "style")
        or (tag == "div" and ("header" in cls or "contents" in cls or "shortcontents" in cls))
        or (tag == "h2" and "contents-heading" in cls)
    )


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(root, "usr", "share", "R", "doc", "manual")
    found = c.Queries()
    p = c.parse_html(os.path.join(docdir, FAQ), None, skip)
    title = c.page_title(p)
    entries = []
    for ev in p.events:
        if ev[0] == "h" and ev[1] in (3, 4):
            entries.append([NUMBER.sub("", ev[2]), []])
        elif ev[0] == "h":
            entries.append(None)
        elif entries and entries[-1] is not None:
            entries[-1][1].append(ev[2])
    found.add_entries(FAQ, title, entries)

    pages = c.html_pages(docdir, exclude={FAQ})
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(docdir, rel), None, skip)
        dis.add_events(c.page_title(p), rel, p.events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "r-doc-html", "copyright"),
        len(pages),
        CAP,
    )


if __name__ == "__main__":
    main()
