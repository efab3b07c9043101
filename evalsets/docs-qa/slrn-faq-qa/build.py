#!/usr/bin/env python3
"""Build slrn-faq-qa (BEIR layout) from Debian's slrn package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x slrn_*.deb PKGROOT`), the folder
holding usr/share/doc/slrn/ and usr/share/man/.  OUTDIR defaults to the folder this script
is in.  Standard library only (plus ../docsqa_common.py and the manual-page reader of
../curl-faq-qa/build.py); the output is deterministic.

The slrn FAQ, reference manual, intrinsic function reference, scoring guide and first
steps are LinuxDoc documents rendered as plain text: a heading is a line "  N.M.  text"
(two spaces, the number with a final dot, two spaces) after a blank line (a sub-heading
"N.M." also directly after text, as two in the manual are); a long one wraps onto the
following lines up to the next blank line (joined with single spaces; a word the renderer
hyphenated across the break, "per-" / "son", is made whole, as the table of contents prints
it).  Everything before the first heading (title, authors, abstract, table of contents) is
left out, and so are the lines made only of underscores with which the renderer frames
examples.

Queries: every heading of the slrn FAQ (usr/share/doc/slrn/FAQ.gz) that ends with "?"; the
number is dropped and wrapped lines are joined with single spaces.
Answer:  the lines under that heading up to the next heading of any level, kept whole
(right-stripped, blank runs made one, common indent removed).
Distractors: the rest of slrn's documentation in the package: manual.txt, slrnfuns.txt,
score.txt and FIRST_STEPS (sections at their headings, which are dropped, blocks at blank
lines); README, README.macros, README.SSL, README.multiuser and the two contrib READMEs
(blocks at blank lines); slrn-doc.html (HTML); the manual pages slrn(1) and slrn_getdescs(8)
(the curl set's troff reader); packed as the docs-qa recipe says.  Left out: the Debian
maintainer's README.Debian and NEWS.Debian, change logs, the contrib NEWS file and the
example configuration and macro files.  At most 2,000 - (number of queries) distractors
are kept, so the corpus is at most 2,000 documents.
Titles: the document's first line ("The slrn FAQ", "The slrn reference manual", "Slrn
Intrinsic Function Reference Manual"), the file name for the READMEs, the HTML page title,
"name(N)" for the manual pages.
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
HEADING = re.compile(r"^  \d+(\.\d+)*\.  (\S.*)$")
UNDERSCORES = re.compile(r"^\s*_+\s*$")
HYPHENATED = re.compile(r"[a-z]-$")
LINUXDOC = ("manual.txt.gz", "slrnfuns.txt.gz", "score.txt.gz", "FIRST_STEPS.gz")
PLAIN = (
    "README",
    "README.macros.gz",
    "README.SSL",
    "README.multiuser",
    "contrib/README.cleanscore.gz",
    "contrib/README.slrnrc-conv",
)
HTML = "slrn-doc.html"
MANPAGES = ("man1/slrn.1.gz", "man8/slrn_getdescs.8.gz")


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


def linuxdoc_sections(text):
    """A LinuxDoc text document as (heading, lines) pairs, from its first heading on."""
    out, in_heading, prev = [], False, ""
    for ln in text.split("\n"):
        if UNDERSCORES.match(ln):
            continue
        m = HEADING.match(ln)
        after_text, prev = bool(prev.strip()), ln
        if m and (not after_text or m.group(1)):  # a heading "N.M." may follow text directly
            out.append([m.group(2).strip(), []])
            in_heading = True
        elif in_heading and ln.strip():  # a long heading wraps up to the next blank line
            out[-1][0] = join_wrapped(out[-1][0], ln.strip())
        else:
            in_heading = False
            if out:
                out[-1][1].append(ln)
    return out


def join_wrapped(head, tail):
    """A wrapped heading line joined to the one before it: with a space, except where the
    renderer hyphenated a word across the break ("per-" / "son"), which is made whole again
    ("person", as the document's own table of contents prints it)."""
    if HYPHENATED.search(head) and tail[:1].islower():
        return head[:-1] + tail
    return head + " " + tail


def first_line(text):
    return next(ln.strip() for ln in text.split("\n") if ln.strip())


def main():
    pkgroot, outdir = c.out_dir(sys.argv, __file__)
    docdir = os.path.join(pkgroot, "usr", "share", "doc", "slrn")
    faq = read_text(os.path.join(docdir, "FAQ.gz"))
    found = c.Queries()
    title = first_line(faq)
    for question, lines in linuxdoc_sections(faq):
        found.add("FAQ", title, question, c.verbatim(lines), "doc/slrn/FAQ.gz")

    dis = c.Distractors(found.answer_texts())
    for name in LINUXDOC:
        text = read_text(os.path.join(docdir, name))
        for _heading, lines in linuxdoc_sections(text):
            dis.add_blocks(first_line(text), "doc/slrn/" + name, c.text_blocks("\n".join(lines)))
    for name in PLAIN:
        text = read_text(os.path.join(docdir, name))
        base = os.path.basename(name)
        dis.add_blocks(base[:-3] if base.endswith(".gz") else base, "doc/slrn/" + name, c.text_blocks(text))
    p = c.parse_html(os.path.join(docdir, HTML), None, lambda tag, a: tag in ("script", "style"))
    dis.add_events(c.page_title(p), "doc/slrn/" + HTML, p.events)
    man_sections = load_man_reader()
    for name in MANPAGES:
        text = read_text(os.path.join(pkgroot, "usr", "share", "man", name)).replace("\\ ", " ")
        page = os.path.basename(name)[:-3]
        for blocks in man_sections(text):
            dis.add_blocks("%s(%s)" % tuple(page.rsplit(".", 1)), "man/" + name, blocks)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(docdir, "copyright"),
        1 + len(LINUXDOC) + len(PLAIN) + 1 + len(MANPAGES),
        CORPUS_CAP - len(found.queries),
    )


if __name__ == "__main__":
    main()
