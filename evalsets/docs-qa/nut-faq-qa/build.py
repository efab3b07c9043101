#!/usr/bin/env python3
"""Build nut-faq-qa (BEIR layout) from Debian's nut-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]
        python3 build.py fetch [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x nut-doc_*.deb PKGROOT`), the folder
holding usr/share/doc/nut-doc/html/.  `fetch` downloads the package recorded in DEBS with
apt-get, checks its size and sha256 and extracts it into a temporary folder first.  OUTDIR
defaults to the folder this script is in.  Standard library only (plus ../docsqa_common.py);
the output is deterministic.

Queries: every section heading (<h2>) of the Network UPS Tools FAQ (html/FAQ.html, AsciiDoc
rendered by DocBook XSL, one page) that ends with "?"; the entry number ("7. ") is dropped.
Answer:  the blocks under that heading up to the next heading, kept whole.  The title of an
admonition ("Note", an <h3> inside the answer) is dropped and its text stays in the answer;
the table of contents is dropped.  Where the FAQ gives several questions one answer, each but
the last is answered only "Or a variation like…" (the next question); those entries are left
out (neither queries nor in the corpus), as the answer says nothing of its own.
Distractors: every section of every page of the other manuals in the package (DocBook XSL,
one page per section): the User Manual (html/user-manual/), the Developer Guide
(html/developer-guide/), the Packager and Integrators Guide (html/packager-guide/), the
cable pin-outs (html/cables/) and the USB setup notes for Solaris-like systems
(html/solaris-usb/), packed as the docs-qa recipe says.  Navigation bars and tables of
contents are dropped.  Left out: html/FAQ/ (the same FAQ, one page per entry), the PDF
renderings, and the README, NEWS, TODO and change logs beside them.  At most 2,000 - (number
of queries) distractors are kept (random.Random(0).sample, kept in document order), so the
corpus is at most 2,000 documents.
Titles: "FAQ" for the answers (the file's name; the page's <title> is empty), the page titles
of the manuals ("4.2. Installing from source", "Network UPS Tools User Manual").
"""

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

DEBS = [
    (
        "nut-doc",
        "2.8.0-7",
        "nut-doc_2.8.0-7_all.deb",
        2912448,
        "d9b7ad56a6635a973a3b92cdb979755d5595264bcd0f5399886351cc9b994542",
    )
]
CORPUS_CAP = 2000
FAQ = "FAQ.html"
MANUALS = ("user-manual/", "developer-guide/", "packager-guide/", "cables/", "solaris-usb/")
NUMBER = re.compile(r"^\d+\. ")
VARIATION = "Or a variation like\u2026"
ADMONITIONS = {"Note", "Tip", "Important", "Warning", "Caution"}


def skip(tag, a):
    cls = (a.get("class") or "").split()
    return tag in ("script", "style") or (tag == "div" and bool({"navheader", "navfooter", "toc"} & set(cls)))


def main():
    root, outdir, tmp = c.package_root(sys.argv, __file__, DEBS)
    htmldir = os.path.join(root, "usr", "share", "doc", "nut-doc", "html")
    found = c.Queries()
    p = c.parse_html(os.path.join(htmldir, FAQ), None, skip)
    events = [ev for ev in p.events if not (ev[0] == "h" and ev[1] >= 3 and ev[2] in ADMONITIONS)]
    entries = c.heading_entries(events, lambda h: NUMBER.sub("", h))
    for e in entries:
        if e is not None and e[1] == [VARIATION]:
            print("left out (the answer is %r): %s" % (VARIATION, e[0]))
    found.add_entries("html/" + FAQ, "FAQ", [e for e in entries if e is None or e[1] != [VARIATION]])

    pages = c.html_pages(htmldir, keep=lambda rel: rel.startswith(MANUALS))
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(htmldir, rel), None, skip)
        dis.add_events(c.page_title(p), "html/" + rel, p.events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "nut-doc", "copyright"),
        1 + len(pages),
        CORPUS_CAP - len(found.queries),
    )
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
