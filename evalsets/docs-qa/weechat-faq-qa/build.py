#!/usr/bin/env python3
"""Build weechat-faq-qa (BEIR layout) from Debian's weechat-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x weechat-doc_*.deb PKGROOT`), the folder
holding usr/share/doc/weechat-doc/.  OUTDIR defaults to the folder this script is in.
Standard library only (plus ../docsqa_common.py); the output is deterministic.

Queries: every section heading (<h2> and below) of the English WeeChat FAQ
(html/weechat_faq.en.html, Asciidoctor HTML) that ends with "?"; the section number
("3.12. ") is dropped.
Answer:  the blocks under that heading up to the next heading of any level, kept whole.
Only div#content is read; the table of contents (div#toc) and the footer are dropped.
Distractors: every section of the other English guides of the package: the user's guide,
the plugin API reference, the scripting guide, the quick start guide, the relay protocol
and the developer's guide (html/weechat_*.en.html), packed as the docs-qa recipe says.  The
translations (*.de.html, *.fr.html, ...) are left out.  At most 2,000 - (number of queries)
distractors are kept (random.Random(0).sample, kept in document order), so the corpus is at
most 2,000 documents.
Titles are the page titles (<title>, e.g. "WeeChat plugin API reference").
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CORPUS_CAP = 2000
NUMBER = re.compile(r"^\d+(\.\d+)*\.? ")
FAQ = "weechat_faq.en.html"


def root(tag, a):
    return tag == "div" and a.get("id") == "content"


def skip(tag, a):
    return tag in ("script", "style") or (tag == "div" and a.get("id") in ("toc", "footer"))


def main():
    pkgroot, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(pkgroot, "usr", "share", "doc", "weechat-doc")
    htmldir = os.path.join(docdir, "html")
    found = c.Queries()
    p = c.parse_html(os.path.join(htmldir, FAQ), root, skip)
    entries = c.heading_entries(p.events, lambda h: NUMBER.sub("", h))
    found.add_entries("html/" + FAQ, c.page_title(p), entries)

    pages = c.html_pages(htmldir, exclude={FAQ}, keep=lambda rel: rel.endswith(".en.html"))
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(htmldir, rel), root, skip)
        dis.add_events(c.page_title(p), "html/" + rel, p.events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(docdir, "copyright"),
        1 + len(pages),
        CORPUS_CAP - len(found.queries),
    )


if __name__ == "__main__":
    main()
