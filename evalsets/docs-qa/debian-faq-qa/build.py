#!/usr/bin/env python3
"""Build debian-faq-qa (BEIR layout) from Debian's debian-faq, debian-reference-en and
debian-handbook packages.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the root the three packages were extracted into (`dpkg-deb -x PKG_*.deb PKGROOT`
for each), the folder holding usr/share/doc/debian/FAQ/, usr/share/debian-reference/ and
usr/share/doc/debian-handbook/html/en-US/.  OUTDIR defaults to the folder this script is in.  Standard library only (plus ../docsqa_common.py); the output is
deterministic.

Queries: every section and subsection heading (<h2> and below) of the Debian FAQ's
chapters (usr/share/doc/debian/FAQ/*.en.html, DocBook HTML; the index page left out)
whose heading ends with "?"; the section number ("3.1.4. ") is dropped.
Answer:  the blocks under that heading up to the next heading of any level, kept whole.
Distractors: every section of the Debian Reference (usr/share/debian-reference/*.en.html)
and of The Debian Administrator's Handbook in English (usr/share/doc/debian-handbook/html/
en-US/*.html, its index page left out), packed as the docs-qa recipe says.  Navigation
headers, footers and banners, tables of contents and footnotes are dropped.  At most 2,000 - (number of queries)
distractors are kept, so the corpus is at most 2,000 documents.
Titles are the page titles (<title>, e.g. "Chapter 3. Choosing a Debian distribution").
"""

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CORPUS_CAP = 2000
NUMBER = re.compile(r"^\d+(\.\d+)*\.? ")
DROPPED = {"navheader", "navfooter", "toc", "footnotes"}


def skip(tag, a):
    cls = set((a.get("class") or "").split())
    return (
        tag in ("script", "style")
        or (tag == "div" and bool(cls & DROPPED))
        or (tag == "ul" and "docnav" in cls)
        or (tag in ("div", "p") and a.get("id") in ("banner", "title"))
    )


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    faqdir = os.path.join(root, "usr", "share", "doc", "debian", "FAQ")
    faq_pages = c.html_pages(faqdir, exclude={"index.en.html"}, keep=lambda r: r.endswith(".en.html"))
    found = c.Queries()
    for rel in faq_pages:
        p = c.parse_html(os.path.join(faqdir, rel), None, skip)
        entries = c.heading_entries(p.events, lambda h: NUMBER.sub("", h))
        found.add_entries("FAQ/" + rel, c.page_title(p), entries)

    refdir = os.path.join(root, "usr", "share", "debian-reference")
    pages = c.html_pages(refdir, keep=lambda r: r.endswith(".en.html"))
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(refdir, rel), None, skip)
        dis.add_events(c.page_title(p), "debian-reference/" + rel, p.events)
    hbdir = os.path.join(root, "usr", "share", "doc", "debian-handbook", "html", "en-US")
    hb_pages = c.html_pages(hbdir, exclude={"index.html"}, keep=lambda r: "/" not in r)
    for rel in hb_pages:
        p = c.parse_html(os.path.join(hbdir, rel), None, skip)
        dis.add_events(c.page_title(p), "debian-handbook/html/en-US/" + rel, p.events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "debian-faq", "copyright"),
        len(faq_pages) + len(pages) + len(hb_pages),
        CORPUS_CAP - len(found.queries),
    )
    shutil.copyfile(
        os.path.join(root, "usr", "share", "doc", "debian-reference-en", "copyright"),
        os.path.join(outdir, "LICENSE-debian-reference.txt"),
    )
    shutil.copyfile(
        os.path.join(root, "usr", "share", "doc", "debian-handbook", "copyright"),
        os.path.join(outdir, "LICENSE-debian-handbook.txt"),
    )


if __name__ == "__main__":
    main()
