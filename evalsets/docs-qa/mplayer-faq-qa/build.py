#!/usr/bin/env python3
"""Build mplayer-faq-qa (BEIR layout) from Debian's mplayer-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]
        python3 build.py fetch [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x mplayer-doc_*.deb PKGROOT`), the folder
holding usr/share/doc/mplayer/HTML/en/ and usr/share/doc/mplayer-doc/copyright.  `fetch`
downloads the package recorded in DEBS with apt-get, checks its size and sha256 and extracts
it into a temporary folder first.  OUTDIR defaults to the folder this script is in.
Standard library only (plus ../docsqa_common.py); the output is deterministic.

Queries: every question of the FAQ chapter of the English MPlayer manual
(HTML/en/faq.html, DocBook HTML: a "qandaset" table whose rows are tr.question / tr.answer,
each with a "Q:" or "A:" label cell) whose text ends with "?".
Answer:  the blocks of the answer row that follows the question, kept whole.  The label
cells, the question lists (the set's own and each section's tr.toc) and the navigation bars
are dropped.
Distractors: every section of every other page of the English manual (HTML/en/*.html: the
chapters on installation, usage, video output, ports, MEncoder and its encoding guide, the
appendices on bug reports and the skin format) and the technical notes in tech/ that are
text files (*.txt, *.txt.gz, e.g. slave.txt, encoding-tips.txt, patches.txt; blocks at blank
lines), packed as the docs-qa recipe says.  Left out: index.html (the table of contents), the
other languages, and the rest of tech/ (Doxyfile, MAINTAINERS, scripts, an example subtitle
file, TODO and wish lists, codecs-in.html).  Navigation bars and the chapters' tables of
contents (div.toc) are dropped.  At most 2,000 - (number of queries)
distractors are kept (random.Random(0).sample, kept in document order), so the corpus is at
most 2,000 documents.
Titles: the page titles ("Chapter 8. Frequently Asked Questions", "4.2. Xv"); for the
technical notes the file name ("tech/slave.txt").
"""

import gzip
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

DEBS = [
    (
        "mplayer-doc",
        "2:1.5+svn38408-1",
        "mplayer-doc_2%3a1.5+svn38408-1_all.deb",
        1315392,
        "d28a513e4ed2f032e69d1a097b1fc3fbe93fc37c47a004f1d8359c49b687445f",
    )
]
CORPUS_CAP = 2000
FAQ = "faq.html"
EXCLUDE = {FAQ, "index.html"}
ROW = re.compile(r'<tr class="(question|answer|qandadiv|toc)"')
LABEL = re.compile(r'<td[^>]*>(?:<a name="[^"]*"></a>)*<p><b>[QA]:</b></p></td>')


def skip(tag, a):
    cls = (a.get("class") or "").split()
    return tag in ("script", "style") or (tag == "div" and bool({"navheader", "navfooter", "toc"} & set(cls)))


def row_blocks(fragment):
    """The text blocks of one table row of the qandaset, its label cell dropped."""
    p = c.DocParser(None, skip)
    p.feed("<body>" + LABEL.sub("", fragment) + "</body>")
    p.close()
    return [ev[2] for ev in p.events if ev[0] == "b"]


def faq_entries(page):
    """[question, answer blocks] in page order, from the rows of the qandaset table."""
    marks = list(ROW.finditer(page))
    entries = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else page.find('<div class="navfooter"', m.start())
        kind = m.group(1)
        if kind == "question":
            entries.append([" ".join(row_blocks(page[m.start() : end])), []])
        elif kind == "answer" and entries:
            entries[-1][1] = row_blocks(page[m.start() : end])
    return entries


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def tech_notes(techdir):
    """Relative paths of the text files (*.txt, *.txt.gz) under tech/, sorted."""
    out = []
    for d, subdirs, files in os.walk(techdir):
        subdirs.sort()
        out += [
            os.path.relpath(os.path.join(d, n), techdir).replace(os.sep, "/")
            for n in files
            if n.endswith((".txt", ".txt.gz"))
        ]
    return sorted(out)


def main():
    root, outdir, tmp = c.package_root(sys.argv, __file__, DEBS)
    htmldir = os.path.join(root, "usr", "share", "doc", "mplayer", "HTML", "en")
    found = c.Queries()
    page = c.read_html(os.path.join(htmldir, FAQ))
    p = c.parse_html(os.path.join(htmldir, FAQ), None, skip)
    found.add_entries("HTML/en/" + FAQ, c.page_title(p), faq_entries(page))

    pages = c.html_pages(htmldir, exclude=EXCLUDE)
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(htmldir, rel), None, skip)
        dis.add_events(c.page_title(p), "HTML/en/" + rel, p.events)
    techdir = os.path.join(root, "usr", "share", "doc", "mplayer", "tech")
    notes = tech_notes(techdir)
    for rel in notes:
        name = rel[:-3] if rel.endswith(".gz") else rel
        dis.add_blocks("tech/" + name, "tech/" + rel, c.text_blocks(read_text(os.path.join(techdir, rel))))
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "mplayer-doc", "copyright"),
        1 + len(pages) + len(notes),
        CORPUS_CAP - len(found.queries),
    )
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
