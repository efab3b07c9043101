#!/usr/bin/env python3
"""Build urxvt-faq-qa (BEIR layout) from Debian's rxvt-unicode package.

Usage:  python3 build.py PKGROOT [OUTDIR]
        python3 build.py fetch [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x rxvt-unicode_*.deb PKGROOT`), the folder
holding usr/share/doc/rxvt-unicode/ and usr/share/man/.  `fetch` downloads the package
recorded in DEBS with apt-get, checks its size and sha256 and extracts it into a temporary
folder first.  OUTDIR defaults to the folder this script is in.  Standard library only (plus
../docsqa_common.py and the curl set's troff reader); the output is deterministic.

Queries: every question of the rxvt-unicode FAQ (usr/share/doc/rxvt-unicode/README.FAQ.gz,
plain text rendered from Pod: chapter lines indented by two spaces, questions by three,
answers by four or more) whose text ends with "?".  A question is a line indented by three
spaces after a blank line or a chapter line; the renderer wraps a long question onto lines
indented less than the answer, which are joined to it with single spaces.
Answer:  the lines after the question up to the next question or chapter line, kept whole
(right-stripped, blank runs made one, common indent removed).  Where several questions share
one answer, the FAQ answers all but the last with "See next entry."; those entries are left
out (neither queries nor in the corpus), as the answer says nothing of its own.
Distractors: the project's manual pages (usr/share/man/man1/*.1.gz: urxvt, urxvtc, urxvtd,
urclock and the urxvt-* extension pages; man3/urxvtperl.3.gz; and man7/urxvt.7.gz without its
FAQ section, which is the FAQ itself: its technical reference, mouse reporting, key codes and
configure options), read by the curl set's troff reader after pod2man's own definitions are
resolved (its preamble dropped, .Vb/.Ve as .nf/.fi, .Sp as .sp, .IX index entries dropped,
its strings for nroff: \\*(C` \\*(C' \\*(L" \\*(R" as '"', \\*(-- as "--", \\*(Aq as "'";
\\s size changes dropped, the indent argument of .IP dropped), and the upstream change log
(changelog.gz, blocks at blank lines), packed as the docs-qa recipe says.  Symbolic links (rxvt.1,
rxvt-unicode.1 are urxvt.1) are skipped, and so is urxvt-font-size(1), an extension Debian adds
(from another author, under the Expat licence).  Left out: the READMEs beside the FAQ (README.configure
is the configure-options section of urxvt(7) again; README.Debian, README.source and
README.devanagari are Debian's notes) and Debian's change logs.  At most 2,000 - (number of
queries) distractors are kept, so the corpus is at most 2,000 documents.
Titles: "RXVT-UNICODE/URXVT FREQUENTLY ASKED QUESTIONS" (the FAQ's first line) for the answers,
"name(N)" for the manual pages ("urxvt(1)", "urxvtperl(3)"), "changelog" for the change log.
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
        "rxvt-unicode",
        "9.30-2+b4",
        "rxvt-unicode_9.30-2+b4_amd64.deb",
        790268,
        "49009997f88531f1635a681acab88fdca8264e1a0b55aede31967af350114334",
    )
]
CORPUS_CAP = 2000
FAQ = "README.FAQ.gz"
SEE_NEXT = "See next entry."
NOT_UPSTREAM = {"urxvt-font-size.1.gz"}
MAN_DIRS = (("man1", ".1.gz"), ("man3", ".3.gz"), ("man7", ".7.gz"))
FAQ_SECTION = '.SH "RXVT\\-UNICODE/URXVT FREQUENTLY ASKED QUESTIONS"'
STRINGS = [
    ("\\*(C`", '"'),
    ("\\*(C'", '"'),
    ('\\*(L"', '"'),
    ('\\*(R"', '"'),
    ("\\*(--", "--"),
    ("\\*(PI", "pi"),
    ("\\*(Aq", "'"),
    ("\\(bu", "•"),
    ("\\ ", " "),
]
SIZE = re.compile(r"\\s[+-]?\d")
MACROS = {".Vb": ".nf", ".Ve": ".fi", ".Sp": ".sp"}
IP_INDENT = re.compile(r'^(\.IP\s+".*")\s+\d+$')


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
    entries, cur, prev = [], None, ""
    for ln in lines[1:]:
        indent = len(ln) - len(ln.lstrip(" "))
        if ln.strip() and indent == 2:  # a chapter line
            cur = None
        elif (
            ln.strip() and indent == 3 and (not prev.strip() or (prev.startswith("  ") and not prev.startswith("   ")))
        ):
            cur = [ln.strip(), []]
            entries.append(cur)
        elif cur is not None and not cur[1] and ln.strip() and indent < 4:
            cur[0] += " " + ln.strip()  # a wrapped question
        elif cur is not None:
            cur[1].append(ln)
        prev = ln
    return [(q, c.verbatim(body)) for q, body in entries]


def resolve_pod2man(text):
    """pod2man's own definitions resolved into plain man macros (see the module doc)."""
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith(".TH "))
    out = []
    for ln in lines[start + 1 :]:
        name = ln.split(" ", 1)[0]
        if name in (".IX", ".ie", ".el", ".if"):
            continue
        out.append(IP_INDENT.sub(r"\1", MACROS.get(name, ln)))
    text = "\n".join(out)
    for a, b in STRINGS:
        text = text.replace(a, b)
    return SIZE.sub("", text)


def without_faq(text):
    """urxvt(7) without its FAQ section (from its .SH line up to the next .SH)."""
    lines = text.split("\n")
    start = lines.index(FAQ_SECTION)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(".SH "))
    return "\n".join(lines[:start] + lines[end:])


def main():
    root, outdir, tmp = c.package_root(sys.argv, __file__, DEBS)
    docdir = os.path.join(root, "usr", "share", "doc", "rxvt-unicode")
    lines = read_text(os.path.join(docdir, FAQ)).split("\n")
    title = lines[0].strip()
    found = c.Queries()
    for question, answer in faq_entries(lines):
        if answer == SEE_NEXT:
            print("left out (the answer is %r): %s" % (SEE_NEXT, question))
            continue
        found.add("doc/rxvt-unicode/" + FAQ, title, question, answer)

    man_sections = load_man_reader()
    dis = c.Distractors(found.answer_texts())
    n_pages = 1
    for sub, ext in MAN_DIRS:
        mandir = os.path.join(root, "usr", "share", "man", sub)
        for name in sorted(os.listdir(mandir)):
            path = os.path.join(mandir, name)
            if os.path.islink(path) or not name.endswith(ext) or name in NOT_UPSTREAM:
                continue
            text = read_text(path)
            if name == "urxvt.7.gz":
                text = without_faq(text)
            n_pages += 1
            page = "%s(%s)" % (name[: -len(ext)], ext[1])
            for blocks in man_sections(resolve_pod2man(text)):
                dis.add_blocks(page, "man/%s/%s" % (sub, name), blocks)
    n_pages += 1
    dis.add_blocks(
        "changelog", "doc/rxvt-unicode/changelog.gz", c.text_blocks(read_text(os.path.join(docdir, "changelog.gz")))
    )
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(docdir, "copyright"),
        n_pages,
        CORPUS_CAP - len(found.queries),
    )
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
