#!/usr/bin/env python3
"""Build cvs-faq-qa (BEIR layout) from Debian's cvs package.

Usage:  python3 build.py PKGROOT [OUTDIR]
        python3 build.py fetch [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x cvs_*.deb PKGROOT`), the folder holding
usr/share/doc/cvs/.  `fetch` downloads the package recorded in DEBS with apt-get, checks its
size and sha256 and extracts it into a temporary folder first.  OUTDIR defaults to the folder
this script is in.  Standard library only (plus ../docsqa_common.py); the output is
deterministic.

Queries: every entry of the CVS FAQ (usr/share/doc/cvs/FAQ.gz, plain text extracted from the
FAQ-O-Matic) whose question ends with "?".  An entry is a line "    N. question" (indented by
four spaces) after a "Category:" line or a blank line; a long question wraps onto the
following lines up to the first blank line, which are joined to it with single spaces.  The
number is dropped.
Answer:  the lines after the question up to the next entry or "Category:" line, kept whole
(right-stripped, blank runs made one, common indent removed) except the FAQ-O-Matic's
"Last modified: _6/13/1997_" line that closes each entry.  Entries whose whole answer only
refers to another entry ("See 3G.4.", "See Section 4F.1", "See 3C.4 above.") or is only the
FAQ-O-Matic's placeholder "[[??]]" are left out (neither queries nor in the corpus).
Distractors: the rest of the CVS documentation in the package: the CVS manual
("Version Management with CVS", cvs.html, Texinfo HTML, one page) and the client/server
protocol manual (cvsclient.html), read section by section with the navigation headers, menus,
tables of contents and the Index appendix dropped; and the text documents beside them (README, NEWS,
BUGS, MINOR-BUGS, TODO, PROJECTS, HACKING, HACKING.DOCS, DEVEL-CVS, RCSFILES, intro.txt;
blocks at blank lines), packed as the docs-qa recipe says.  Left out: the .txt, .info and
.pdf renderings of the same manuals, the manual pages (cvs(1) is the command reference of the
manual again), the change logs (ChangeLog.*, changelog.gz), AUTHORS, Debian's own files,
cvs-paper (a 1990 paper, troff ms and PDF) and writeproxy.rtf.  At most 2,000 - (number of
queries) distractors are kept (random.Random(0).sample, kept in document order), so the
corpus is at most 2,000 documents.
Titles: "FAQ" for the answers (the file's name; it has no title line), the page
titles of the manuals ("CVS—Concurrent Versions System v1.12.13", "CVS
Client/Server"), the file name for the text documents ("NEWS").
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
        "cvs",
        "2:1.12.13+real-28+deb12u1",
        "cvs_2%3a1.12.13+real-28+deb12u1_amd64.deb",
        2805266,
        "bf5f4e7a16ea4627b3d7edd39c3d690c947868545dd310e2080096d177107134",
    )
]
CORPUS_CAP = 2000
FAQ = "FAQ.gz"
HTML_DOCS = ("cvs.html", "cvsclient.html")
TEXT_DOCS = (
    "README.gz",
    "NEWS.gz",
    "BUGS.gz",
    "MINOR-BUGS",
    "TODO.gz",
    "PROJECTS",
    "HACKING.gz",
    "HACKING.DOCS",
    "DEVEL-CVS",
    "RCSFILES.gz",
    "intro.txt",
)
ENTRY = re.compile(r"^    (\d+)\. (.+)$")
CATEGORY = re.compile(r"^  Category: ")
NO_ANSWER = re.compile(r"^(See (Section )?\d+[A-Z]\.\d+( above| below)?\.?|\[\[\?\?\]\])$")
LAST_MODIFIED = re.compile(r"^\s*Last modified: _[^_]*_\s*$")
SKIP_CLASSES = {"header", "contents", "shortcontents", "section-toc", "menu", "index-cp", "index-fn"}


def skip(tag, a):
    cls = set((a.get("class") or "").split())
    return tag in ("script", "style") or bool(cls & SKIP_CLASSES) or a.get("id") == "Index"


def read_text(path):
    """A text file as UTF-8, or as Latin-1 when it is not valid UTF-8 (the FAQ has one Latin-1 byte)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def faq_entries(lines):
    """[question, answer lines] in FAQ order (see the module doc)."""
    entries, cur, wrapping, prev = [], None, False, ""
    for ln in lines:
        m = ENTRY.match(ln) if not prev.strip() or CATEGORY.match(prev) else None
        prev = ln
        if m:
            cur = [m.group(2).strip(), []]
            entries.append(cur)
            wrapping = True
        elif wrapping and ln.strip():
            cur[0] += " " + ln.strip()  # a wrapped question
        elif CATEGORY.match(ln):
            cur, wrapping = None, False
        else:
            wrapping = False
            if cur is not None and not LAST_MODIFIED.match(ln):
                cur[1].append(ln)
    return [(q, c.verbatim(body)) for q, body in entries]


def main():
    root, outdir, tmp = c.package_root(sys.argv, __file__, DEBS)
    docdir = os.path.join(root, "usr", "share", "doc", "cvs")
    found = c.Queries()
    for question, answer in faq_entries(read_text(os.path.join(docdir, FAQ)).split("\n")):
        if NO_ANSWER.match(answer):
            print("left out (the answer is %r): %s" % (answer, question))
            continue
        found.add("doc/cvs/" + FAQ, "FAQ", question, answer)

    dis = c.Distractors(found.answer_texts())
    for name in HTML_DOCS:
        p = c.parse_html(os.path.join(docdir, name), None, skip)
        dis.add_events(c.page_title(p), "doc/cvs/" + name, p.events)
    for name in TEXT_DOCS:
        title = name[:-3] if name.endswith(".gz") else name
        dis.add_blocks(title, "doc/cvs/" + name, c.text_blocks(read_text(os.path.join(docdir, name))))
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(docdir, "copyright"),
        1 + len(HTML_DOCS) + len(TEXT_DOCS),
        CORPUS_CAP - len(found.queries),
    )
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
