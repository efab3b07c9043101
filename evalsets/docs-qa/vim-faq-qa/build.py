#!/usr/bin/env python3
"""Build vim-faq-qa (BEIR layout) from Debian's vim-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x vim-doc_*.deb PKGROOT`), the folder
holding usr/share/doc/vim/.  OUTDIR defaults to the folder this script is in.
Standard library only (plus ../docsqa_common.py); the output is deterministic.

Queries: every entry of the Vim FAQ (usr/share/doc/vim/FAQ.gz, plain text; an entry
starts with "N.M. " at the start of a line, its question may wrap over several lines)
whose question ends with "?"; the number is dropped and the wrapped lines joined
with single spaces.  The index at the top of the file is skipped.
Answer:  the lines after the question up to the next entry, SECTION line or "====="
rule, kept whole (right-stripped, blank runs made one, common indent removed).
Distractors: the Vim help files as HTML (usr/share/doc/vim/html/*.html; only the
preformatted help text; the per-release change and patch lists version4..9.html
left out, as they are most of the text and mostly one-line patch titles), each cut into sections at its "=====" rules, then into
blocks at blank lines, packed as the docs-qa recipe says; at most 4,000 are kept.
Titles: the help page titles ("Vim documentation: options"); answers are titled
"Vim FAQ", as the FAQ file has no title line of its own.
"""

import gzip
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CAP = 4000
ENTRY = re.compile(r"^(\d+)\.(\d+)\. (.*)$")
SECTION = re.compile(r"^SECTION \d+ - ")
RULE = re.compile(r"^={20,}\s*$")
FAQ_TITLE = "Vim FAQ"
CHANGES = re.compile(r"^version\d+\.html$")  # per-release change and patch lists


def skip(tag, a):
    return tag in ("script", "style")


def faq_entries(lines):
    """(question, answer lines) for each entry of the FAQ body."""
    starts = [i for i, ln in enumerate(lines) if SECTION.match(ln)]
    seen, body_start = set(), 0
    for i in starts:  # the body starts where the first section name comes again
        name = lines[i].strip()
        if name in seen:
            body_start = i
            break
        seen.add(name)
    entries, cur = [], None
    i = body_start
    while i < len(lines):
        ln = lines[i]
        m = ENTRY.match(ln)
        if m:
            q = [m.group(3)]
            i += 1
            while i < len(lines) and lines[i].strip():
                q.append(lines[i].strip())
                i += 1
            cur = [c.WS.sub(" ", " ".join(q)).strip(), []]
            entries.append(cur)
            continue
        if SECTION.match(ln) or RULE.match(ln):
            cur = None
        elif cur is not None:
            cur[1].append(ln)
        i += 1
    return entries


def help_sections(text):
    """The help text cut at its ===== rules into lists of blocks."""
    out, cur = [], []
    for ln in text.split("\n"):
        if RULE.match(ln):
            out.append(cur)
            cur = []
        else:
            cur.append(ln)
    out.append(cur)
    return [c.text_blocks("\n".join(s)) for s in out]


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(root, "usr", "share", "doc", "vim")
    with gzip.open(os.path.join(docdir, "FAQ.gz"), "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    found = c.Queries()
    for question, body in faq_entries(lines):
        found.add("FAQ", FAQ_TITLE, question, c.verbatim(body))

    htmldir = os.path.join(docdir, "html")
    pages = ["html/" + rel for rel in c.html_pages(htmldir, keep=lambda r: not CHANGES.match(r))]
    dis = c.Distractors(found.answer_texts())
    for rel in pages:
        p = c.parse_html(os.path.join(docdir, rel), None, skip)
        text = "\n\n".join(ev[2] for ev in p.events if ev[0] == "b" and ev[1] == "pre")
        for blocks in help_sections(text):
            dis.add_blocks(c.page_title(p), rel, blocks)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "vim-doc", "copyright"),
        len(pages),
        CAP,
    )


if __name__ == "__main__":
    main()
