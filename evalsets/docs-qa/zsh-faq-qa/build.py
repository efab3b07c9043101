#!/usr/bin/env python3
"""Build zsh-faq-qa (BEIR layout) from Debian's zsh-doc and zsh-common packages.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is a folder into which both packages were extracted
(`dpkg-deb -x zsh-doc_*.deb PKGROOT; dpkg-deb -x zsh-common_*.deb PKGROOT`): zsh-doc
ships the HTML (usr/share/doc/zsh-common/html/), zsh-common the copyright file of the
shared doc folder.  OUTDIR defaults to the folder this script is in.  Standard library
only (plus ../docsqa_common.py); the output is deterministic.

Queries: every <h2> entry of the Z-Shell FAQ chapters (FAQ01.html .. FAQ06.html) whose
text ends with "?"; the entry number ("3.2: ") is dropped.
Answer:  the blocks under that entry up to the next <h1>/<h2>, kept whole (the
chapter navigation links dropped).
Distractors: every section of every page of the Z Shell Manual (texinfo HTML; the
navigation tables, redirect stubs, the index pages, the table of contents and the
FAQ pages left out), packed as the docs-qa recipe says; at most 4,000 are kept.
Titles are the page titles (<title>) only.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CAP = 4000
NUMBER = re.compile(r"^\d+(\.\d+)*: ")
NAV = {"Table of Contents", "Previous Chapter", "Next Chapter"}
FAQ = re.compile(r"^FAQ\d*\.html$|^The-Zsh-FAQ\.html$")
NOT_MANUAL = re.compile(r"Index\.html$|^(index|zsh_toc|zsh_abt)\.html$")


def skip(tag, a):
    cls = (a.get("class") or "").split()
    return (
        tag in ("script", "style")
        or (tag == "table" and ("header" in cls or "menu" in cls))
        or (tag == "div" and "contents" in cls)
    )


def is_stub(path):
    with open(path, encoding="utf-8") as f:
        return 'http-equiv="Refresh"' in f.read(4096)


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(root, "usr", "share", "doc", "zsh-common", "html")
    found = c.Queries()
    for n in range(1, 10):
        faq = "FAQ%02d.html" % n
        if not os.path.exists(os.path.join(docdir, faq)):
            continue
        p = c.parse_html(os.path.join(docdir, faq), None, skip)
        title = c.page_title(p)
        entries = []
        for ev in p.events:
            if ev[0] == "h" and ev[1] == 2:
                entries.append([NUMBER.sub("", ev[2]), []])
            elif ev[0] == "h" and ev[1] < 2:
                entries.append(None)
            elif ev[0] == "b" and ev[2] not in NAV and entries and entries[-1] is not None:
                entries[-1][1].append(ev[2])
        found.add_entries(faq, title, entries)

    pages = [
        rel
        for rel in c.html_pages(docdir)
        if not FAQ.match(rel) and not NOT_MANUAL.search(rel) and not is_stub(os.path.join(docdir, rel))
    ]
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(docdir, rel), None, skip)
        dis.add_events(c.page_title(p), rel, p.events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "zsh-common", "copyright"),
        len(pages),
        CAP,
    )


if __name__ == "__main__":
    main()
