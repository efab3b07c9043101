#!/usr/bin/env python3
"""Build cryptsetup-faq-qa (BEIR layout) from Debian's cryptsetup and cryptsetup-bin packages.

Usage:  python3 build.py PKGROOT [OUTDIR]
        python3 build.py fetch [OUTDIR]

PKGROOT is the root both packages are extracted into (`dpkg-deb -x cryptsetup_*.deb PKGROOT`
and `dpkg-deb -x cryptsetup-bin_*.deb PKGROOT`), holding usr/share/doc/cryptsetup/ and
usr/share/man/man8/.  `fetch` downloads the packages recorded in DEBS with apt-get, checks
their sizes and sha256 and extracts them into a temporary folder first.  OUTDIR defaults to
the folder this script is in.  Standard library only (plus ../docsqa_common.py and the curl
set's troff reader); the output is deterministic.

Queries: every entry of the cryptsetup FAQ (usr/share/doc/cryptsetup/FAQ.md.gz, Markdown kept
as plain text: an entry is a line " * **N.M question**", indented by one to three spaces) whose question ends with "?".  The
question is the line without its list marker, its "**" bold markers and its number (one entry
puts its "?" after the closing "**").
Answer:  the lines after the question up to the next entry, "#" heading or "___" rule, kept
whole (right-stripped, blank runs made one, common indent removed).
Distractors: the rest of the upstream cryptsetup documentation in the two packages: the manual
pages cryptsetup(8), its per-action pages (cryptsetup-open(8), …), integritysetup(8) and
veritysetup(8) (Asciidoctor troff, read by the curl set's reader after Asciidoctor's own
definitions are resolved: its macro definitions and conditionals dropped, .URL written as the
macro defines it, "text <url>", \\*(Aq as "'" and the glyphs \\(cq \\(oq \\(lq \\(rq \\(at \\(bu \\(rs
as the characters they name), the release notes v*-ReleaseNotes, README.md
(cut at "#" headings, which are dropped), Keyring.txt and LUKS2-locking.txt (blocks at blank
lines), packed as the docs-qa recipe says.  Left out as Debian's own documentation:
README.Debian, README.debug, README.gnupg, README.gnupg-sc, README.keyctl, README.opensc,
NEWS.Debian, the change log, crypttab(5), cryptdisks_start(8), cryptdisks_stop(8) and
luksformat(8) (from the cryptsetup package's debian/ folder), and the example script.  At most
2,000 - (number of queries) distractors are kept (random.Random(0).sample, kept in document
order), so the corpus is at most 2,000 documents.
Titles: "Frequently Asked Questions Cryptsetup/LUKS" (the FAQ's first heading) for the answers,
"name(8)" for the manual pages, the file name for the text documents ("v2.6.0-ReleaseNotes").
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
        "cryptsetup",
        "2:2.6.1-4~deb12u2",
        "cryptsetup_2%3a2.6.1-4~deb12u2_amd64.deb",
        212844,
        "bef82c749c2f03d1f8c51d51090074b87d06852874dd35b3a237cd889bce0371",
    ),
    (
        "cryptsetup-bin",
        "2:2.6.1-4~deb12u2",
        "cryptsetup-bin_2%3a2.6.1-4~deb12u2_amd64.deb",
        473680,
        "ac25a10b8c7a5fbd4ffe64a830edd24a7e04b3416914bbb096c21e92e15a65d2",
    ),
]
CORPUS_CAP = 2000
FAQ = "FAQ.md.gz"
ENTRY = re.compile(r"^ {1,3}\* \*\*(\d+\.\d+) (.*)$")
END = re.compile(r"^(# |___)")
RELEASE_NOTES = re.compile(r"^v[\d.]+-ReleaseNotes(\.gz)?$")
TEXT_DOCS = ("Keyring.txt", "LUKS2-locking.txt")
UPSTREAM_MAN = re.compile(r"^(cryptsetup|cryptsetup-[A-Za-z0-9]+|integritysetup|veritysetup)\.8\.gz$")
GLYPHS = [
    ("\\(cq", "\u2019"),
    ("\\(oq", "\u2018"),
    ("\\(lq", "\u201c"),
    ("\\(rq", "\u201d"),
    ("\\(at", "@"),
    ("\\(bu", "\u2022"),
    ("\\(rs", "\\e"),
]
URL = re.compile(r'^\.URL\s+"([^"]*)"\s+"([^"]*)"\s*(?:"([^"]*)")?\s*$')


def load_curl_build():
    """The curl set's build script: the docs-qa troff reader and Markdown sectioning."""
    path = os.path.join(HERE, "..", "curl-faq-qa", "build.py")
    spec = importlib.util.spec_from_file_location("curl_faq_build", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def faq_entries(lines):
    """[question, answer] in FAQ order (see the module doc)."""
    entries, cur = [], None
    for ln in lines:
        m = ENTRY.match(ln)
        if m:
            cur = [m.group(2).replace("**", "").strip(), []]
            entries.append(cur)
        elif END.match(ln):
            cur = None
        elif cur is not None:
            cur[1].append(ln)
    return [(q, c.verbatim(body)) for q, body in entries]


def resolve_asciidoctor(text):
    """Asciidoctor's own troff definitions resolved into plain man macros (see the module doc)."""
    out, in_de = [], False
    for ln in text.split("\n"):
        if in_de:
            in_de = not ln.startswith("..")
            continue
        if ln.startswith(".de "):
            in_de = True
            continue
        if ln.startswith((".ie", ".el", ".if", ".als", ".ss")):
            continue
        m = URL.match(ln)
        if m:
            ln = "%s <%s>%s" % (m.group(2), m.group(1), m.group(3) or "")
        out.append(ln)
    text = "\n".join(out).replace("\\*(Aq", "'")
    for a, b in GLYPHS:
        text = text.replace(a, b)
    return text


def main():
    root, outdir, tmp = c.package_root(sys.argv, __file__, DEBS)
    docdir = os.path.join(root, "usr", "share", "doc", "cryptsetup")
    lines = read_text(os.path.join(docdir, FAQ)).split("\n")
    title = lines[0].lstrip("# ").strip()
    found = c.Queries()
    for question, answer in faq_entries(lines):
        found.add("doc/cryptsetup/" + FAQ, title, question, answer)

    curl = load_curl_build()
    dis = c.Distractors(found.answer_texts())
    n_pages = 1
    mandir = os.path.join(root, "usr", "share", "man", "man8")
    for name in sorted(os.listdir(mandir)):
        if not UPSTREAM_MAN.match(name) or os.path.islink(os.path.join(mandir, name)):
            continue
        n_pages += 1
        for blocks in curl.man_sections(resolve_asciidoctor(read_text(os.path.join(mandir, name)))):
            dis.add_blocks("%s(8)" % name[:-5], "man/man8/" + name, blocks)
    notes = sorted((n for n in os.listdir(docdir) if RELEASE_NOTES.match(n)), key=release_key)
    for name in ["README.md.gz", *TEXT_DOCS, *notes]:
        n_pages += 1
        base = name[:-3] if name.endswith(".gz") else name
        text = read_text(os.path.join(docdir, name))
        sections = curl.doc_sections(text) if name.startswith("README.md") else [c.text_blocks(text)]
        for blocks in sections:
            dis.add_blocks(base, "doc/cryptsetup/" + name, blocks)
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


def release_key(name):
    """Release notes in version order (v1.0.7 before v1.1.0 … before v2.6.1)."""
    return tuple(int(x) for x in re.findall(r"\d+", name.split("-")[0]))


if __name__ == "__main__":
    main()
