#!/usr/bin/env python3
"""Build xterm-faq-qa (BEIR layout) from Debian's xterm package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x xterm_*.deb PKGROOT`), the folder
holding usr/share/doc/xterm/ and usr/share/man/man1/.  OUTDIR defaults to the folder this
script is in.  Standard library only (plus ../docsqa_common.py and the manual-page reader
of ../curl-faq-qa/build.py); the output is deterministic.

Queries: every heading (<h2> to <h5>) of the XTerm FAQ (usr/share/doc/xterm/xterm.faq.html)
that ends with "?".
Answer:  the blocks under that heading up to the next heading of any level, kept whole.
The page's navigation list (div.nav) is dropped.
Distractors: the rest of xterm's documentation in the package: the manual pages
(usr/share/man/man1/*.1.gz: xterm, resize, uxterm, koi8rxterm, lxterm), read by the curl
set's troff reader after resolving what xterm's pages add: string definitions (.ds, the
groff branch of .ie \\n(.g), \\*x / \\*(xx uses, the .bP / .NS / .NE macros (a paragraph
break, the start and end of an example) and tbl tables (rows kept as lines); the text of
"XTerm Control Sequences" (ctlseqs.txt.gz, blocks at blank lines) and README.i18n.gz;
packed as the docs-qa recipe says.  Left out: the change log (xterm.log.html), the troff
source of the control sequences (ctlseqs.ms.gz, the same text as ctlseqs.txt), the
termcap/terminfo entries and the Debian maintainer's README.Debian.  At most
2,000 - (number of queries) distractors are kept, so the corpus is at most 2,000 documents.
Titles: the FAQ's page title ("XTerm – Frequently Asked Questions (FAQ)"), "name(1)" for
the manual pages and the file name ("ctlseqs.txt", "README.i18n") for the text files.
"""

import gzip
import importlib.util
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS_CAP = 2000
FAQ = "xterm.faq.html"
TEXT_DOCS = ("ctlseqs.txt.gz", "README.i18n.gz")
DS = re.compile(r"^\.(?:ie\s+\\n\(\.g\s+\.)?ds\s+(\S+)\s*(.*)$")
STRING_USE = re.compile(r"\\\*(\((..)|\[([^\]]*)\]|(.))")
GLYPHS = [
    ("\\(bu", "•"),
    ("\\(en", "–"),
    ("\\(lq", "“"),
    ("\\(rq", "”"),
    ("\\(oq", "‘"),
    ("\\(cq", "’"),
    ("\\ ", " "),
    ("\\0", " "),
    ("\\.", "."),
]
BACKSLASH = "\0"  # stands in for an escaped backslash while the other escapes are resolved
MACROS = {".bP": ".PP", ".NS": ".nf", ".NE": ".fi"}


def load_man_reader():
    """man_sections() of the curl set's build script: the docs-qa troff reader."""
    path = os.path.join(HERE, "..", "curl-faq-qa", "build.py")
    spec = importlib.util.spec_from_file_location("curl_faq_build", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.man_sections


def skip(tag, a):
    return tag in ("script", "style") or (tag == "div" and "nav" in (a.get("class") or "").split())


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def resolve_troff(text):
    """xterm's own troff definitions resolved into plain man macros (see the module doc)."""
    strings, out = {}, []
    in_de, table = False, None
    for ln in text.split("\n"):
        if in_de:
            in_de = not ln.startswith("..")
            continue
        if ln.startswith(".de "):
            in_de = True
            continue
        m = DS.match(ln)
        if m:
            strings[m.group(1)] = m.group(2)
            continue
        if ln.startswith((".ie", ".el", ".if")):
            continue
        if table == "format":  # tbl options and format lines, up to the one ending in "."
            table = "rows" if ln.rstrip().endswith(".") else "format"
            continue
        if ln.startswith(".TS"):
            table = "format"
            out.append(".nf")
            continue
        if ln.startswith(".TE"):
            table = None
            out.append(".fi")
            continue
        if table == "rows":
            if ln.strip() in ("_", "=", "T}"):
                continue
            ln = ln.replace("T{", "").replace("T}", "")
        name = ln.split(" ", 1)[0]
        out.append(MACROS.get(name, ln) if name in MACROS else ln)
    text = "\n".join(out).replace("\\\\", BACKSLASH)
    text = STRING_USE.sub(lambda m: strings.get(m.group(2) or m.group(3) or m.group(4), ""), text)
    for a, b in GLYPHS:
        text = text.replace(a, b)
    return text.replace(BACKSLASH, "\\\\")


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(root, "usr", "share", "doc", "xterm")
    found = c.Queries()
    p = c.parse_html(os.path.join(docdir, FAQ), None, skip)
    entries = c.heading_entries(p.events)
    found.add_entries(FAQ, c.page_title(p), entries)

    dis = c.Distractors(found.answer_texts())
    man_sections = load_man_reader()
    mandir = os.path.join(root, "usr", "share", "man", "man1")
    pages = [
        n for n in sorted(os.listdir(mandir)) if n.endswith(".1.gz") and not os.path.islink(os.path.join(mandir, n))
    ]
    for name in pages:
        for blocks in man_sections(resolve_troff(read_text(os.path.join(mandir, name)))):
            dis.add_blocks("%s(1)" % name[:-5], "man/man1/" + name, blocks)
    for name in TEXT_DOCS:
        dis.add_blocks(name[:-3], "doc/xterm/" + name, c.text_blocks(read_text(os.path.join(docdir, name))))
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(docdir, "copyright"),
        1 + len(pages) + len(TEXT_DOCS),
        CORPUS_CAP - len(found.queries),
    )


if __name__ == "__main__":
    main()
