#!/usr/bin/env python3
"""Build borg-faq-qa (BEIR layout) from Debian's borgbackup-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x borgbackup-doc_*.deb PKGROOT`), the
folder holding usr/share/doc/borgbackup/html/ and usr/share/doc/borgbackup-doc/copyright.
OUTDIR defaults to the folder this script is in.  Standard library only (plus
../docsqa_common.py); the output is deterministic.

Queries: every section heading (<h2> and below) of the Borg FAQ (html/faq.html, Sphinx HTML)
that ends with "?".
Answer:  the blocks under that heading up to the next heading of any level, kept whole.
Only the page body (div.body) is read; "¶" header links, scripts and toctrees are dropped.
Distractors: every section of every other page of the Borg documentation in the package
(html/*.html, usage/, internals/, deployment/), packed as the docs-qa recipe says.  Left
out: the search page and Sphinx's own files (_static/, _sources/).  At most
2,000 - (number of queries) distractors are kept, so the corpus is at most 2,000 documents.
Titles are the pages' <h1> ("Frequently asked questions", "borg create").
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CORPUS_CAP = 2000
FAQ = "faq.html"
EXCLUDE = {FAQ, "search.html"}
EXCLUDE_DIRS = ("_static/", "_sources/", "_images/")


def root(tag, a):
    return tag == "div" and "body" in (a.get("class") or "").split()


def skip(tag, a):
    cls = (a.get("class") or "").split()
    return tag in ("script", "style") or "headerlink" in cls or (tag == "div" and "toctree-wrapper" in cls)


def title_of(p):
    for ev in p.events:
        if ev[0] == "h" and ev[1] == 1:
            return ev[2]
    return c.WS.sub(" ", p.title).split(" \u2014 ")[0].strip()


def main():
    pkgroot, outdir = c.out_dir(sys.argv, __file__)
    htmldir = os.path.join(pkgroot, "usr", "share", "doc", "borgbackup", "html")
    found = c.Queries()
    p = c.parse_html(os.path.join(htmldir, FAQ), root, skip)
    entries = c.heading_entries(p.events)
    found.add_entries(FAQ, title_of(p), entries)

    pages = c.html_pages(htmldir, exclude=EXCLUDE, keep=lambda rel: not rel.startswith(EXCLUDE_DIRS))
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(htmldir, rel), root, skip)
        dis.add_events(title_of(p), rel, p.events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(pkgroot, "usr", "share", "doc", "borgbackup-doc", "copyright"),
        1 + len(pages),
        CORPUS_CAP - len(found.queries),
    )


if __name__ == "__main__":
    main()
