#!/usr/bin/env python3
"""Build fontforge-faq-qa (BEIR layout) from Debian's fontforge-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]
        python3 build.py fetch [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x fontforge-doc_*.deb PKGROOT`), the folder
holding usr/share/doc/fontforge/ and usr/share/doc/fontforge-doc/copyright.  `fetch` downloads
the package recorded in DEBS with apt-get, checks its size and sha256 and extracts it into a
temporary folder first.  OUTDIR defaults to the folder this script is in.  Standard library
only (plus ../docsqa_common.py); the output is deterministic.

Queries: every question of the FontForge FAQ (faq.html, Sphinx HTML) that ends with "?".  Each
question is the term (<dt>) of a definition list of its own at the top level of the page body;
terms of lists nested inside an answer are part of that answer.
Answer:  the blocks of the definition (<dd>) up to the end of the question's list, kept whole.
The epigraphs between the questions, the question lists under the chapter headings and the
"¶" header links are in no document.
Distractors: every section of every other page of the English documentation (the user
interface reference ui/, scripting/, techref/, tutorial/, fontutils/, appendices/ and the top
level pages), only the page body (div.body) read, "¶" header links and toctrees dropped,
packed as the docs-qa recipe says.  Left out: old/ (German and Japanese pages of the former
documentation), appendices/ofl/ and appendices/OFL-Unofficial.html (SIL's Open Font Licence
and its FAQ in translation, not FontForge's text), and Sphinx's generated genindex, py-modindex
and search pages.  At most 2,000 - (number of queries) distractors are kept
(random.Random(0).sample, kept in document order), so the corpus is at most 2,000 documents.
Titles: the page titles without the " — FontForge 20230101 documentation" suffix
("Frequently Asked Questions", "Font Info").
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

DEBS = [
    (
        "fontforge-doc",
        "1:20230101~dfsg-1.1~deb12u1",
        "fontforge-doc_1%3a20230101~dfsg-1.1~deb12u1_all.deb",
        3706828,
        "5edb42c04a2e685e013a62f6767dfc4bc46b75a9d50162ae6ff55ea08dca8bc1",
    )
]
CORPUS_CAP = 2000
FAQ = "faq.html"
EXCLUDE = {FAQ, "genindex.html", "py-modindex.html", "search.html", "appendices/OFL-Unofficial.html"}
EXCLUDE_DIRS = ("old/", "appendices/ofl/", "_static/", "_sources/", "_images/")
SUFFIX = " \u2014 FontForge 20230101 documentation"


def root(tag, a):
    return tag == "div" and "body" in (a.get("class") or "").split()


def skip(tag, a):
    cls = (a.get("class") or "").split()
    return tag in ("script", "style") or "headerlink" in cls or (tag == "div" and "toctree-wrapper" in cls)


class FaqParser(c.DocParser):
    """DocParser that marks the terms of top-level definition lists as questions ("q" blocks)
    and the end of each such list with an ("end",) event."""

    def __init__(self):
        super().__init__(root, skip)
        self.dl = 0

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        if tag == "dl" and self.active():
            self.dl += 1
        elif tag == "dt" and self.active() and self.dl == 1:
            self.kind = "q"

    def handle_endtag(self, tag):
        super().handle_endtag(tag)
        if tag == "dl" and self.active() and self.dl:
            self.dl -= 1
            if not self.dl:
                self.events.append(("end",))


def faq_entries(path):
    p = FaqParser()
    p.feed(c.read_html(path))
    p.close()
    entries = []
    for ev in p.events:
        if ev[0] == "b" and ev[1] == "q":
            entries.append([ev[2], []])
        elif ev[0] in ("end", "h"):
            entries.append(None)
        elif ev[0] == "b" and entries and entries[-1] is not None:
            entries[-1][1].append(ev[2])
    return title_of(p), entries


def title_of(p):
    return c.WS.sub(" ", p.title).strip().replace(SUFFIX, "")


def main():
    pkgroot, outdir, tmp = c.package_root(sys.argv, __file__, DEBS)
    docdir = os.path.join(pkgroot, "usr", "share", "doc", "fontforge")
    found = c.Queries()
    title, entries = faq_entries(os.path.join(docdir, FAQ))
    found.add_entries(FAQ, title, entries)

    pages = c.html_pages(docdir, exclude=EXCLUDE, keep=lambda rel: not rel.startswith(EXCLUDE_DIRS))
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(docdir, rel), root, skip)
        dis.add_events(title_of(p), rel, p.events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(pkgroot, "usr", "share", "doc", "fontforge-doc", "copyright"),
        1 + len(pages),
        CORPUS_CAP - len(found.queries),
    )
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
