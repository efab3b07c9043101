#!/usr/bin/env python3
"""Build perl-faq-qa (BEIR layout) from Debian's perl-doc package.

Usage:  python3 build.py PKGROOT [OUTDIR]

PKGROOT is the extracted package root (`dpkg-deb -x perl-doc_*.deb PKGROOT`), the folder
holding usr/share/perl/<version>/pod/.  OUTDIR defaults to the folder this script is in.
Standard library only (plus ../docsqa_common.py); the output is deterministic.

The Pod sources are read by a small Pod reader (standard library only): ordinary
paragraphs with their lines joined, verbatim (indented) paragraphs kept line by line,
=item terms kept with the paragraph after them, formatting codes rendered as pod2text
renders them in substance (C<x>, B<x>, I<x>, F<x>, S<x> -> x; L<text|target> -> text;
L<page/"sec"> -> "sec" in page; L<url> -> url; E<lt> -> <; X<> and Z<> dropped).

Queries: every =head2 of the Perl FAQ (perlfaq1.pod .. perlfaq9.pod) and of the Perl
Unicode FAQ (perlunifaq.pod) whose text ends with "?".
Answer:  the paragraphs under that heading up to the next =head1/=head2, kept whole.
Distractors: every section of every other Pod page of the package, packed as the
docs-qa recipe says; at most 4,000 are kept.  Left out: perlfaq.pod and perltoc.pod
(they list every FAQ question) and the per-release perl5*delta.pod pages.
Titles: each page's NAME line ("perlfaq4 - Data Manipulation").
"""

import html.entities
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docsqa_common as c

CAP = 4000
FAQ = re.compile(r"^perl(?:faq[1-9]|unifaq)\.pod$")
LEFT_OUT = re.compile(r"^perl(?:faq|toc)\.pod$|^perl\d+delta\.pod$")
CODE = re.compile(r"([A-Z])(<+)")
ENTITIES = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/", "quot": '"', "amp": "&", "apos": "'"}


def entity(name):
    name = name.strip()
    if name in ENTITIES:
        return ENTITIES[name]
    if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*", name):
        return chr(int(name, 0) if not re.fullmatch(r"0[0-7]+", name) else int(name, 8))
    cp = html.entities.name2codepoint.get(name)
    return chr(cp) if cp else name


def link(inner):
    text, bar, _target = inner.partition("|")
    if bar:
        return text
    if re.match(r"[a-z][a-z0-9+.-]*:\S", inner):  # a URL
        return inner
    page, slash, section = inner.partition("/")
    if not slash:
        return inner
    section = section.strip().strip('"')
    return '"%s" in %s' % (section, page) if page else '"%s"' % section


def render(s):
    """Pod formatting codes rendered as text."""
    out, i = [], 0
    while i < len(s):
        m = CODE.match(s, i)
        n = len(m.group(2)) if m else 0
        if m and n > 1 and not s[m.end() : m.end() + 1].isspace():
            m = None
        if not m:
            out.append(s[i])
            i += 1
            continue
        if n == 1:  # ends at the first ">" not closing a nested code
            j, depth = m.end(), 0
            while j < len(s):
                if CODE.match(s, j) and s[j + 1] == "<" and (j + 2 >= len(s) or s[j + 2] != "<"):
                    depth += 1
                    j += 2
                    continue
                if s[j] == ">":
                    if depth == 0:
                        break
                    depth -= 1
                j += 1
            inner, end = s[m.end() : j], j + 1
        else:  # C<< ... >>: ends at whitespace and as many ">"
            close = re.compile(r"\s" + ">" * n)
            cm = close.search(s, m.end())
            j = cm.start() if cm else len(s)
            inner, end = s[m.end() : j].strip(), (cm.end() if cm else len(s))
        letter = m.group(1)
        if letter in "XZ":
            pass
        elif letter == "E":
            out.append(entity(inner))
        elif letter == "L":
            out.append(link(render(inner)))
        else:
            out.append(render(inner))
        i = end
    return "".join(out)


def pod_events(path):
    """("h", level, text) and ("b", kind, text) events of one Pod file, as the HTML parser gives them."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    events, skip_to = [], None
    for para in re.split(r"\n[ \t]*\n", text):
        para = para.strip("\n")
        if not para.strip():
            continue
        if skip_to:
            if para.startswith(skip_to):
                skip_to = None
            continue
        if para.startswith("="):
            cmd, _, rest = para.partition(" ")
            rest = c.WS.sub(" ", rest).strip()
            if cmd.startswith("=head") and cmd[5:].isdigit():
                events.append(("h", int(cmd[5:]), render(rest)))
            elif cmd == "=item":
                item = render(rest)
                if item and item != "*":
                    events.append(("b", "dt", re.sub(r"^\*\s+", "", item)))
            elif cmd == "=begin" and rest.split()[:1] not in (["text"], [":text"]):
                skip_to = "=end"
            elif cmd == "=for":
                continue
            continue  # =over, =back, =cut, =pod, =encoding
        if para[0] in " \t":
            lines = [ln.rstrip() for ln in para.split("\n")]
            events.append(("b", "pre", "\n".join(lines)))
        else:
            events.append(("b", "p", c.WS.sub(" ", render(para)).strip()))
    return events


def title_of(events, fallback):
    for k, ev in enumerate(events):
        if ev[0] == "h" and ev[2].strip().upper() == "NAME":
            nxt = events[k + 1] if k + 1 < len(events) else None
            if nxt and nxt[0] == "b":
                return nxt[2]
    return fallback


def main():
    root, outdir = c.out_dir(sys.argv, __file__)
    perl = os.path.join(root, "usr", "share", "perl")
    version = sorted(os.listdir(perl))[-1]
    poddir = os.path.join(perl, version, "pod")
    names = sorted(n for n in os.listdir(poddir) if n.endswith(".pod"))
    found = c.Queries()
    for name in [n for n in names if FAQ.match(n)]:
        events = pod_events(os.path.join(poddir, name))
        title = title_of(events, name)
        entries = []
        for ev in events:
            if ev[0] == "h" and ev[1] == 2:
                entries.append([ev[2].strip(), []])
            elif ev[0] == "h" and ev[1] < 2:
                entries.append(None)
            elif ev[0] == "b" and entries and entries[-1] is not None:
                entries[-1][1].append(ev[2])
        found.add_entries(name, title, entries, "pod/" + name)

    pages = [n for n in names if not FAQ.match(n) and not LEFT_OUT.match(n)]
    dis = c.Distractors(found.answer_texts())
    for name in pages:
        events = pod_events(os.path.join(poddir, name))
        dis.add_events(title_of(events, name), "pod/" + name, events)
    c.finish(
        outdir,
        found,
        dis.cands,
        os.path.join(root, "usr", "share", "doc", "perl-doc", "copyright"),
        len(pages),
        CAP,
    )


if __name__ == "__main__":
    main()
