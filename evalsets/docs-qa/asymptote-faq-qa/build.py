#!/usr/bin/env python3
"""Build asymptote-faq-qa (BEIR layout) from Debian's asymptote-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]
        python3 build.py fetch [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x asymptote-doc_*.deb PKGROOT`), the folder
holding usr/share/doc/asymptote/ and usr/share/doc/asymptote-doc/copyright.  `fetch` downloads
the package recorded in DEBS with apt-get, checks its size and sha256 and extracts it into a
temporary folder first.  OUTDIR defaults to the folder this script is in.  Standard library
only (plus ../docsqa_common.py); the output is deterministic.

Queries: every question of the Asymptote FAQ (usr/share/doc/asymptote/faq/section1..9.html, one
page per section; each question is an <h2> "Question 2.1.  question") that ends with "?"; the
"Question N.M." prefix is dropped.
Answer:  the blocks under that heading up to the next heading, kept whole.  Each page's
navigation footer (after its last <hr>: "Next:", "Back:", "Return to contents", the address
and the "Extracted from Asymptote Frequently Asked Questions" line) is cut off first; the
question list at the top of each page belongs to its <h1> and is no answer.
Distractors: every section of every page of the Asymptote manual (usr/share/doc/asymptote/html/,
Texinfo HTML, one page per node), navigation headers, menus and the table of contents dropped,
packed as the docs-qa recipe says.  Left out: the index page (Index.html), the FAQ's contents
page (faq/index.html, the questions again), the plain-text FAQ (asy-faq.ascii.gz, the same
FAQ), and the PDFs.  At most 2,000 - (number of queries) distractors are kept
(random.Random(0).sample, kept in document order), so the corpus is at most 2,000 documents.
Titles: the page titles ("Asymptote FAQ - Section 2", "Paths and guides (Asymptote: the Vector
Graphics Language)").
"""

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

DEBS = [
    (
        "asymptote-doc",
        "2.85+ds-1",
        "asymptote-doc_2.85+ds-1_all.deb",
        3322716,
        "b2ae6e97c64ede66c1e41cc913f790b01188d198557203a2b3c500ba3495e6ca",
    )
]
CORPUS_CAP = 2000
FAQ_PAGES = ["faq/section%d.html" % n for n in range(1, 10)]
EXCLUDE = {"Index.html"}
PREFIX = re.compile(r"^Question \d+\.\d+\.\s+")
SKIP_CLASSES = {"header", "contents", "section-toc", "menu", "index-cp"}


def skip(tag, a):
    cls = set((a.get("class") or "").split())
    return tag in ("script", "style") or bool(cls & SKIP_CLASSES)


def faq_page(path):
    """A FAQ page parsed without its navigation footer (everything after its last <hr>)."""
    text = c.read_html(path)
    p = c.DocParser(None, skip)
    p.feed(text[: text.rfind("<hr>")] + "</body></html>")
    p.close()
    return p


def main():
    root, outdir, tmp = c.package_root(sys.argv, __file__, DEBS)
    docdir = os.path.join(root, "usr", "share", "doc", "asymptote")
    found = c.Queries()
    for rel in FAQ_PAGES:
        p = faq_page(os.path.join(docdir, rel))
        found.add_entries(rel, c.page_title(p), c.heading_entries(p.events, lambda h: PREFIX.sub("", h)))

    htmldir = os.path.join(docdir, "html")
    pages = c.html_pages(htmldir, exclude=EXCLUDE)
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(htmldir, rel), None, skip)
        dis.add_events(c.page_title(p), "html/" + rel, p.events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "asymptote-doc", "copyright"),
        len(FAQ_PAGES) + len(pages),
        CORPUS_CAP - len(found.queries),
    )
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
