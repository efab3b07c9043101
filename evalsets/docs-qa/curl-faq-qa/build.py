#!/usr/bin/env python3
"""Build curl-faq-qa (BEIR layout) from Debian's libcurl4-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x libcurl4-doc_*.deb PKGROOT`), the
folder holding usr/share/doc/libcurl4/ and usr/share/man/man3/.  OUTDIR defaults to the
folder this script is in.  Standard library only (plus ../docsqa_common.py); the output
is deterministic.

Queries: every entry of the curl FAQ (usr/share/doc/libcurl4/FAQ.gz, plain text; an
entry is a line "  N.M question" after a blank line, in the body after the index) whose question ends with
"?"; the number is dropped.
Answer:  the lines after the question up to the next entry or section line, kept
whole (sub-entries such as 4.5.1 included; right-stripped, blank runs made one,
common indent removed).
Distractors: the rest of the package's documentation: the Markdown and text documents
of usr/share/doc/libcurl4 (cut into sections at "#" headings, which are dropped, blocks at blank lines;
THANKS, a list of names, and the example programs left out) and the libcurl manual
pages (usr/share/man/man3/*.3.gz: sections at .SH/.SS, headings dropped, blocks at paragraphs, .IP and
.TP items; font escapes removed, a few character escapes resolved), packed as the
docs-qa recipe says; at most 4,000 are kept.
Titles: the document's file name ("SSL-PROBLEMS.md") or the manual page's name and
section ("curl_easy_setopt(3)"); answers are titled "FAQ", the file's name.
"""

import gzip
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CAP = 4000
ENTRY = re.compile(r"^  (\d+)\.(\d+) (.+)$")
SECTION = re.compile(r"^\d+\. \S")
RULE = re.compile(r"^={20,}\s*$")
MD_HEADING = re.compile(r"^#{1,6} ")
LEFT_OUT = {"FAQ", "THANKS"}
FONT = re.compile(r"\\f(\[[^\]]*\]|\(..|.)")
ESCAPES = [
    ("\\-", "-"),
    ("\\(aq", "'"),
    ("\\(dq", '"'),
    ("\\(em", "--"),
    ("\\&", ""),
    ("\\|", ""),
    ("\\e", "\\"),
    ("\\\\", "\\"),
]


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def faq_entries(lines):
    body = next(i for i, ln in enumerate(lines) if RULE.match(ln))
    entries, cur, prev = [], None, ""
    for ln in lines[body + 1 :]:
        m = ENTRY.match(ln) if not prev.strip() else None  # an entry follows a blank line
        prev = ln
        if m:
            cur = [m.group(3).strip(), []]
            entries.append(cur)
        elif SECTION.match(ln):
            cur = None
        elif cur is not None:
            cur[1].append(ln)
    return entries


def doc_sections(text):
    """A Markdown or text document cut at its headings into lists of blocks."""
    out, cur = [], []
    for ln in text.split("\n"):
        if MD_HEADING.match(ln):  # headings are not put into any passage
            out.append(cur)
            cur = []
        else:
            cur.append(ln)
    out.append(cur)
    return [c.text_blocks("\n".join(s)) for s in out]


def unescape(s):
    s = FONT.sub("", s)
    for a, b in ESCAPES:
        s = s.replace(a, b)
    return s


def macro_args(rest):
    """The text of a macro's arguments: quoted arguments unquoted, joined by spaces."""
    rest = rest.strip()
    parts = re.findall(r'"([^"]*)"|(\S+)', rest)
    return " ".join(a or b for a, b in parts)


def man_sections(text):
    """A manual page (troff, man macros) as lists of blocks, one list per .SH/.SS."""
    sections, blocks, para, fill = [], [], [], True

    def end_para():
        if para:
            if fill:
                blocks.append(("p", c.WS.sub(" ", " ".join(para)).strip()))
            else:
                blocks.append(("pre", "\n".join(para).strip("\n")))
            para.clear()

    for raw in text.split("\n"):
        if raw.startswith(('.\\"', "'\\\"")):
            continue
        if raw.startswith("."):
            name, _, rest = raw[1:].partition(" ")
            name = name.strip()
            if name in ("SH", "SS"):
                end_para()
                sections.append(blocks)  # section headings are not put into any passage
                blocks = []
            elif name in ("PP", "P", "LP", "sp", "br", "RS", "RE", "TP"):
                end_para()
            elif name == "IP":
                end_para()
                arg = unescape(macro_args(rest))
                if arg:
                    blocks.append(("dt", arg))
            elif name == "nf":
                end_para()
                fill = False
            elif name == "fi":
                end_para()
                fill = True
            elif name in ("B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM"):
                para.append(unescape(macro_args(rest)))
            continue  # .TH, .ad, .na and other layout requests carry no text
        line = unescape(raw)
        if fill and not line.strip():
            end_para()
        else:
            para.append(line)
    end_para()
    sections.append(blocks)
    return sections


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(root, "usr", "share", "doc", "libcurl4")
    lines = read_text(os.path.join(docdir, "FAQ.gz")).split("\n")
    found = c.Queries()
    for question, body in faq_entries(lines):
        found.add("FAQ", "FAQ", question, c.verbatim(body))

    dis = c.Distractors(found.answer_texts())
    n_pages = 0
    for name in sorted(os.listdir(docdir)):
        path = os.path.join(docdir, name)
        base = name[:-3] if name.endswith(".gz") else name
        if not os.path.isfile(path) or base in LEFT_OUT:
            continue
        n_pages += 1
        for blocks in doc_sections(read_text(path)):
            dis.add_blocks(base, "doc/libcurl4/" + name, blocks)
    mandir = os.path.join(root, "usr", "share", "man", "man3")
    for name in sorted(os.listdir(mandir)):
        path = os.path.join(mandir, name)
        if os.path.islink(path) or not name.endswith(".3.gz"):
            continue
        text = read_text(path)
        if text.lstrip().startswith(".so "):
            continue
        n_pages += 1
        title = "%s(3)" % name[:-5]
        for blocks in man_sections(text):
            dis.add_blocks(title, "man/man3/" + name, blocks)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "libcurl4-doc", "copyright"),
        n_pages,
        CAP,
    )


if __name__ == "__main__":
    main()
