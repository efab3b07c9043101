#!/usr/bin/env python3
"""Build mc-faq-qa (BEIR layout) from Debian's mc-data package.

Usage:  python3 build.py PKGROOT [OUTDIR]
        python3 build.py fetch [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x mc-data_*.deb PKGROOT`), the folder
holding usr/share/doc/mc-data/ and usr/share/man/man1/.  `fetch` downloads the package
recorded in DEBS with apt-get, checks its size and sha256 and extracts it into a temporary
folder first.  OUTDIR defaults to the folder this script is in.  Standard library only (plus
../docsqa_common.py and the curl set's troff reader); the output is deterministic.

Queries: every entry of the GNU Midnight Commander FAQ (usr/share/doc/mc-data/FAQ.gz, plain
text) whose question ends with "?".  In the body (from the first chapter line "1 Getting
started" on) an entry is a line "N.M question" at the left margin; a long question wraps onto
the lines up to the first blank line, which are joined to it with single spaces.  The number
is dropped.  A chapter line ("7 Virtual file systems") is any other line at the left margin
(the question continuations excepted).
Answer:  the lines after the question up to the next entry or chapter line, kept whole
(right-stripped, blank runs made one, common indent removed).
Distractors: the rest of the package's documentation of MC: the English manual pages mc(1),
mcedit(1) and mcview(1) (troff, read by the curl set's reader; mcdiff.1 is a link to mc.1
and the translated pages are left out) and README, HACKING, TODO and the upstream change log
(changelog.gz) beside the FAQ (blocks at blank lines), packed as the docs-qa recipe says.
Left out: ABOUT-NLS (gettext's generic notes), AUTHORS (names), Debian's change log, and the
built-in help file usr/share/mc/help/mc.hlp (made from mc.1, so the same text again).  At most
2,000 - (number of queries) distractors are kept, so the corpus is at most 2,000 documents.
Titles: "GNU Midnight Commander Frequently Asked Questions" (the FAQ's first two lines) for the
answers, "name(1)" for the manual pages, the file name for the text files ("HACKING").
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
        "mc-data",
        "3:4.8.29-2",
        "mc-data_3%3a4.8.29-2_all.deb",
        1345540,
        "a273c2e833524f1d2e8579b737802b18ad4c77d9f45b3ef7d6fc6b2605e4fd3d",
    )
]
CORPUS_CAP = 2000
FAQ = "FAQ.gz"
MAN_PAGES = ("mc.1.gz", "mcedit.1.gz", "mcview.1.gz")
TEXT_DOCS = ("README.gz", "HACKING.gz", "TODO.gz", "changelog.gz")
ENTRY = re.compile(r"^(\d+)\.(\d+) (.+)$")
BODY = "1 Getting started"


def load_man_reader():
    """man_sections() of the curl set's build script: the docs-qa troff reader."""
    path = os.path.join(HERE, "..", "curl-faq-qa", "build.py")
    spec = importlib.util.spec_from_file_location("curl_faq_build", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.man_sections


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def faq_entries(lines):
    """[question, answer lines] in FAQ order (see the module doc)."""
    body = lines.index(BODY)
    entries, cur, wrapping = [], None, False
    for ln in lines[body:]:
        m = ENTRY.match(ln)
        if m:
            cur = [m.group(3).strip(), []]
            entries.append(cur)
            wrapping = True
        elif wrapping and ln.strip():
            cur[0] += " " + ln.strip()  # a wrapped question
        elif ln[:1].strip():  # a chapter line
            cur = None
            wrapping = False
        else:
            wrapping = False
            if cur is not None:
                cur[1].append(ln)
    return [(q, c.verbatim(body)) for q, body in entries]


def main():
    root, outdir, tmp = c.package_root(sys.argv, __file__, DEBS)
    docdir = os.path.join(root, "usr", "share", "doc", "mc-data")
    lines = read_text(os.path.join(docdir, FAQ)).split("\n")
    title = " ".join(ln.strip() for ln in lines[:2])
    found = c.Queries()
    for question, answer in faq_entries(lines):
        found.add("doc/mc-data/" + FAQ, title, question, answer)

    man_sections = load_man_reader()
    dis = c.Distractors(found.answer_texts())
    mandir = os.path.join(root, "usr", "share", "man", "man1")
    for name in MAN_PAGES:
        for blocks in man_sections(read_text(os.path.join(mandir, name))):
            dis.add_blocks("%s(1)" % name[:-5], "man/man1/" + name, blocks)
    for name in TEXT_DOCS:
        dis.add_blocks(name[:-3], "doc/mc-data/" + name, c.text_blocks(read_text(os.path.join(docdir, name))))
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(docdir, "copyright"),
        1 + len(MAN_PAGES) + len(TEXT_DOCS),
        CORPUS_CAP - len(found.queries),
    )
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
