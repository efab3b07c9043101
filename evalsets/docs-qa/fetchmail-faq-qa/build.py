#!/usr/bin/env python3
"""Build fetchmail-faq-qa (BEIR layout) from Debian's fetchmail package.

Usage:  python3 build.py PKGROOT [OUTDIR]
        python3 build.py fetch [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x fetchmail_*.deb PKGROOT`), the folder
holding usr/share/doc/fetchmail/ and usr/share/man/man1/fetchmail.1.gz.  `fetch` downloads
the package recorded in DEBS with apt-get, checks its size and sha256 and extracts it into a
temporary folder first.  OUTDIR defaults to the folder this script is in.  Standard library
only (plus ../docsqa_common.py and the curl set's troff reader); the output is deterministic.

Queries: every entry of the Fetchmail FAQ (usr/share/doc/fetchmail/fetchmail-FAQ.html, one
page; an entry is an <h2> heading "G1. question") whose question ends with "?"; the entry
number ("G1. ") is dropped.
Answer:  the blocks under that heading up to the next heading of any level, kept whole (so
an entry whose text is all in <h3> subsections has no answer and is left out).  An entry whose
whole answer refers to another entry ("See I5 above.") is left out too (neither a query nor in
the corpus).
Distractors: the rest of the fetchmail documentation in the package: the manual page
fetchmail(1) (troff, read by the curl set's reader), the HTML pages design-notes.html,
fetchmail-features.html and todo.html, the release notes NEWS.gz and OLDNEWS.gz (cut at "#"
headings, which are dropped, blocks at blank lines) and README.SSL.gz (blocks at blank lines),
packed as the docs-qa recipe says.  Left out: Debian's own files (README.Debian, NEWS.Debian,
TODO.Debian, README.systemd), contrib/ and examples/.
At most 2,000 - (number of queries) distractors are kept, so the corpus is at most 2,000
documents.
Titles: the page title for HTML ("The Fetchmail FAQ", "Updated design notes on fetchmail"),
"fetchmail(1)" for the manual page, the file name for the text files ("NEWS").
"""

import gzip
import importlib.util
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

HERE = os.path.dirname(os.path.abspath(__file__))
DEBS = [
    (
        "fetchmail",
        "6.4.37-1",
        "fetchmail_6.4.37-1_amd64.deb",
        375940,
        "67a888df52239e0988a9170b8d8521fbeca1d9934a8b0f1a3e1ea6982a880ed6",
    )
]
CORPUS_CAP = 2000
FAQ = "fetchmail-FAQ.html"
HTML_DOCS = ("design-notes.html", "fetchmail-features.html", "todo.html")
TEXT_DOCS = ("NEWS.gz", "OLDNEWS.gz", "README.SSL.gz")
NUMBER = re.compile(r"^[A-Z]\d+\. ")
SEE_OTHER = re.compile(r"^See [A-Z]\d+ (above|below)\.$")


def load_curl_build():
    """The curl set's build script: the docs-qa troff reader and Markdown/text sectioning."""
    path = os.path.join(HERE, "..", "curl-faq-qa", "build.py")
    spec = importlib.util.spec_from_file_location("curl_faq_build", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def skip(tag, a):
    return tag in ("script", "style")


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def main():
    root, outdir, tmp = c.package_root(sys.argv, __file__, DEBS)
    docdir = os.path.join(root, "usr", "share", "doc", "fetchmail")
    found = c.Queries()
    p = c.parse_html(os.path.join(docdir, FAQ), None, skip)
    entries = c.heading_entries(p.events, lambda h: NUMBER.sub("", h))
    for e in entries:
        if e is not None and len(e[1]) == 1 and SEE_OTHER.match(e[1][0]):
            print("left out (the answer is %r): %s" % (e[1][0], e[0]))
    entries = [e for e in entries if e is None or len(e[1]) != 1 or not SEE_OTHER.match(e[1][0])]
    found.add_entries(FAQ, c.page_title(p), entries)

    curl = load_curl_build()
    dis = c.Distractors(found.answer_texts())
    man = "fetchmail.1.gz"
    for blocks in curl.man_sections(read_text(os.path.join(root, "usr", "share", "man", "man1", man))):
        dis.add_blocks("fetchmail(1)", "man/man1/" + man, blocks)
    for name in HTML_DOCS:
        p = c.parse_html(os.path.join(docdir, name), None, skip)
        dis.add_events(c.page_title(p), "doc/fetchmail/" + name, p.events)
    for name in TEXT_DOCS:
        for blocks in curl.doc_sections(read_text(os.path.join(docdir, name))):
            dis.add_blocks(name[:-3], "doc/fetchmail/" + name, blocks)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(docdir, "copyright"),
        2 + len(HTML_DOCS) + len(TEXT_DOCS),
        CORPUS_CAP - len(found.queries),
    )
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
