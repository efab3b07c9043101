"""Shared parts of the docs-qa build scripts (standard library only).

HTML parsing into heading/block events, sectioning, packing blocks into passages of
at most 2,000 characters, and writing a BEIR folder with shuffled ids.
"""

import html.parser
import json
import os
import random
import re
import shutil
import sys

MAX_CHARS = 2000
MIN_CHARS = 80
SEED = 0

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
BLOCK = {
    "p",
    "div",
    "pre",
    "li",
    "dt",
    "dd",
    "tr",
    "blockquote",
    "table",
    "ul",
    "ol",
    "dl",
    "section",
    "caption",
    "thead",
    "tbody",
    "tfoot",
    "figure",
    "figcaption",
    "address",
    "hr",
    "br",
    "center",
    "form",
}
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
WS = re.compile(r"\s+")


class DocParser(html.parser.HTMLParser):
    """Turns one HTML page into a list of events:
    ("h", level, text) for headings and ("b", kind, text) for text blocks.
    Only text inside the content root is kept (root_test(tag, attrs) -> bool;
    None means the whole <body>); elements for which skip_test is true are dropped."""

    def __init__(self, root_test, skip_test):
        super().__init__(convert_charrefs=True)
        self.root_test, self.skip_test = root_test, skip_test
        self.stack = []  # open tags: (tag, flags)
        self.in_root = 0  # >0 while inside the content root
        self.skip = 0  # >0 while inside a dropped element
        self.pre = 0  # >0 while inside <pre>
        self.heading = None  # [level, parts] while inside a heading
        self.buf = []  # inline text of the current block
        self.kind = "p"
        self.events = []
        self.title = ""
        self.in_title = False

    # -- helpers ---------------------------------------------------------------
    def flush(self):
        raw = "".join(self.buf)
        self.buf = []
        if self.kind == "pre":
            lines = [ln.rstrip() for ln in raw.split("\n")]
            while lines and not lines[0].strip():
                lines.pop(0)
            while lines and not lines[-1].strip():
                lines.pop()
            text = "\n".join(lines)
        else:
            text = WS.sub(" ", raw).strip()
        if text:
            self.events.append(("b", self.kind, text))
        self.kind = "pre" if self.pre else "p"

    def active(self):
        return self.in_root and not self.skip

    # -- parser callbacks ------------------------------------------------------
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "title":
            self.in_title = True
        if tag in VOID:
            if tag in ("br", "hr") and self.active():
                if self.pre:
                    self.buf.append("\n")
                else:
                    self.flush()
            return
        flags = set()
        if not self.in_root and (self.root_test(tag, a) if self.root_test else tag == "body"):
            flags.add("root")
            self.in_root += 1
        elif self.in_root and (self.skip or self.skip_test(tag, a)):
            flags.add("skip")
            self.skip += 1
        self.stack.append((tag, flags))
        if not self.active():
            return
        if tag in HEADINGS:
            self.flush()
            self.heading = [HEADINGS[tag], []]
        elif tag == "pre":
            self.flush()
            self.pre += 1
            self.kind = "pre"
        elif tag in BLOCK:
            self.flush()
            if tag == "dt":
                self.kind = "dt"
        elif tag in ("td", "th"):
            self.buf.append(" ")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        if tag in VOID:
            return
        # pop up to the matching open tag (tolerates unclosed children)
        idx = None
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                idx = i
                break
        if idx is None:
            return
        while len(self.stack) > idx:
            t, flags = self.stack.pop()
            self._close(t, flags)

    def _close(self, tag, flags):
        if self.active():
            if tag in HEADINGS and self.heading is not None:
                level, parts = self.heading
                self.heading = None
                text = WS.sub(" ", "".join(parts)).strip()
                if text:
                    self.events.append(("h", level, text))
            elif tag == "pre":
                self.flush()
                self.pre -= 1
                self.kind = "pre" if self.pre else "p"
            elif tag in BLOCK:
                self.flush()
            elif tag in ("td", "th"):
                self.buf.append(" ")
        if "skip" in flags:
            self.skip -= 1
        if "root" in flags:
            self.flush()
            self.in_root -= 1

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        if not self.active():
            return
        if self.heading is not None:
            self.heading[1].append(data)
        else:
            self.buf.append(data)

    def close(self):
        super().close()
        self.flush()


def parse(path, root_test, skip_test):
    with open(path, encoding="utf-8") as f:
        p = DocParser(root_test, skip_test)
        p.feed(f.read())
        p.close()
    return p


def sections(events):
    """Split events into sections: (heading_level, heading_text, [blocks])."""
    out = [(0, "", [])]
    for ev in events:
        if ev[0] == "h":
            out.append((ev[1], ev[2], []))
        else:
            out[-1][2].append((ev[1], ev[2]))
    return out


def split_long(text, limit=MAX_CHARS):
    """Split one over-long block at line breaks, then at spaces, as a last resort."""
    pieces, cur = [], ""
    for line in text.split("\n"):
        while len(line) > limit:
            cut = line.rfind(" ", 0, limit)
            if cut <= 0:
                cut = limit
            if cur:
                pieces.append(cur)
                cur = ""
            pieces.append(line[:cut].rstrip())
            line = line[cut:].lstrip()
        if cur and len(cur) + 1 + len(line) > limit:
            pieces.append(cur)
            cur = line
        else:
            cur = cur + "\n" + line if cur else line
    if cur:
        pieces.append(cur)
    return [p for p in pieces if p.strip()]


def pack(blocks, limit=MAX_CHARS):
    """Greedy packing of blocks into passages of at most `limit` characters,
    cutting only between blocks; a definition term (<dt>) stays with the block after it."""
    units = []
    glue = False
    for kind, text in blocks:
        if glue and units:
            units[-1] = units[-1] + "\n" + text
        else:
            units.append(text)
        glue = kind == "dt"
    out, cur = [], ""
    for u in units:
        for part in split_long(u, limit) if len(u) > limit else [u]:
            if cur and len(cur) + 2 + len(part) > limit:
                out.append(cur)
                cur = part
            else:
                cur = cur + "\n\n" + part if cur else part
    if cur:
        out.append(cur)
    return out


def write_beir(outdir, answers, distractors, queries, qrels_pairs, rng):
    """answers: {key: (title, text, source)}; distractors: [(title, text, source)];
    queries: [(qkey, text)]; qrels_pairs: [(qkey, answer_key)]."""
    docs = [(k, t, x, s, False) for k, (t, x, s) in answers.items()]
    docs += [(None, t, x, s, True) for (t, x, s) in distractors]
    order = list(range(len(docs)))
    rng.shuffle(order)  # ids do not reveal which documents are answers
    ids, rows = {}, []
    for n, i in enumerate(order):
        key, title, text, source, is_d = docs[i]
        did = "d%05d" % n
        if key is not None:
            ids[key] = did
        rows.append({"_id": did, "title": title, "text": text, "distractor": is_d, "source": source})
    with open(os.path.join(outdir, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    qid = {}
    with open(os.path.join(outdir, "queries.jsonl"), "w", encoding="utf-8") as f:
        for n, (qk, text) in enumerate(queries):
            qid[qk] = "q%03d" % n
            f.write(json.dumps({"_id": qid[qk], "text": text}, ensure_ascii=False) + "\n")
    with open(os.path.join(outdir, "qrels.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qk, ak in qrels_pairs:
            f.write("%s\t%s\t1\n" % (qid[qk], ids[ak]))
    return len(rows)


# ---------------------------------------------------------------------------- shared helpers
CHARSET = re.compile(rb'charset=["\']?([A-Za-z0-9_-]+)', re.I)


def read_html(path):
    """Decode a page as UTF-8 when it is valid UTF-8 (some pages declare another
    charset but are UTF-8), else by the charset its <meta> declares."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    m = CHARSET.search(raw[:2048])
    enc = m.group(1).decode("ascii") if m else "utf-8"
    return raw.decode(enc, errors="replace")


def parse_html(path, root_test, skip_test):
    p = DocParser(root_test, skip_test)
    p.feed(read_html(path))
    p.close()
    return p


def page_title(parser):
    t = WS.sub(" ", parser.title).strip()
    if t:
        return t
    for ev in parser.events:
        if ev[0] == "h":
            return ev[2]
    return ""


def text_blocks(text):
    """Plain text into blocks at blank lines; lines kept as they are (right-stripped)."""
    blocks, cur = [], []
    for line in text.split("\n"):
        line = line.rstrip()
        if line.strip():
            cur.append(line)
        elif cur:
            blocks.append(("pre", "\n".join(cur)))
            cur = []
    if cur:
        blocks.append(("pre", "\n".join(cur)))
    return blocks


def verbatim(lines):
    """An answer taken from a plain-text file: lines right-stripped, runs of blank lines
    made one, leading and trailing blank lines dropped, the common indent removed."""
    lines = [ln.rstrip() for ln in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    indent = min((len(ln) - len(ln.lstrip()) for ln in lines if ln), default=0)
    out = []
    for ln in lines:
        if ln or (out and out[-1]):
            out.append(ln[indent:])
    return "\n".join(out)


def html_pages(docdir, exclude=(), keep=None):
    """Relative paths of the .html pages under docdir, sorted; symlinks skipped."""
    pages = []
    for d, subdirs, files in os.walk(docdir):
        subdirs.sort()
        for name in files:
            path = os.path.join(d, name)
            rel = os.path.relpath(path, docdir).replace(os.sep, "/")
            if (
                name.endswith(".html")
                and not os.path.islink(path)
                and rel not in exclude
                and (keep is None or keep(rel))
            ):
                pages.append(rel)
    pages.sort()
    return pages


class Distractors:
    """Collects distractor passages: packed, at least MIN_CHARS, exact duplicates
    (and any answer text) removed."""

    def __init__(self, answer_texts):
        self.seen = set(answer_texts)
        self.cands = []

    def add_blocks(self, title, source, blocks):
        for text in pack(blocks):
            if len(text) < MIN_CHARS or text in self.seen:
                continue
            self.seen.add(text)
            self.cands.append((title, text, source))

    def add_events(self, title, source, events):
        for _level, _heading, blocks in sections(events):
            self.add_blocks(title, source, blocks)


def heading_entries(events, clean=None):
    """FAQ entries from a page's events, for ``Queries.add_entries``: a heading of level 2 or
    deeper opens an entry (its text, passed through ``clean`` when given), the text events up
    to the next heading are its answer; a level-1 heading ends the entry before it."""
    entries = []
    for ev in events:
        if ev[0] == "h" and ev[1] >= 2:
            entries.append([ev[2] if clean is None else clean(ev[2]), []])
        elif ev[0] == "h":
            entries.append(None)
        elif entries and entries[-1] is not None:
            entries[-1][1].append(ev[2])
    return entries


class Queries:
    """The queries of a set with their answers: every FAQ entry whose question ends with "?" and
    has an answer; the others are listed as skipped (``finish`` prints them)."""

    def __init__(self):
        self.answers, self.queries, self.qrels, self.skipped = {}, [], [], []

    def add(self, page, title, question, text, source=None):
        """One entry of ``page`` (its key and its name in the skipped list); ``source`` is
        the answer's source field (``page`` by default)."""
        if not question.endswith("?") or not text:
            self.skipped.append((page, question))
            return
        key = (page, len(self.queries))
        self.answers[key] = (title, text, page if source is None else source)
        self.queries.append((key, question))
        self.qrels.append((key, key))

    def add_entries(self, page, title, entries, source=None):
        """``entries``: ``[question, blocks]`` in page order, ``None`` where a section ended
        (left out); the answer is the blocks joined by a blank line."""
        for e in entries:
            if e is None:
                continue
            question, blocks = e
            self.add(page, title, question, "\n\n".join(blocks), source)

    def answer_texts(self):
        return [a[1] for a in self.answers.values()]


def finish(outdir, found, cands, copyright_path, n_pages, cap=4000):
    """Cap the distractors (random.Random(0).sample, kept in document order), write the
    BEIR files of ``found`` (a ``Queries``) and LICENSE.txt, print a summary."""
    rng = random.Random(SEED)
    n_cands = len(cands)
    if n_cands > cap:
        keep = sorted(rng.sample(range(n_cands), cap))
        cands = [cands[i] for i in keep]
    os.makedirs(outdir, exist_ok=True)
    n_docs = write_beir(outdir, found.answers, cands, found.queries, found.qrels, rng)
    shutil.copyfile(copyright_path, os.path.join(outdir, "LICENSE.txt"))
    print(
        "pages: %d  queries: %d  distractor candidates: %d  kept: %d  corpus: %d"
        % (n_pages, len(found.queries), n_cands, len(cands), n_docs)
    )
    for src, q in found.skipped:
        print("not a query (does not end with '?'): %s: %s" % (src, q))


def out_dir(argv, script):
    if len(argv) < 2:
        sys.exit(sys.modules["__main__"].__doc__)
    root = os.path.abspath(argv[1])
    outdir = os.path.abspath(argv[2]) if len(argv) > 2 else os.path.dirname(os.path.abspath(script))
    return root, outdir


# ---------------------------------------------------------------------------- fetching the packages
def fetch_packages(debs, workdir):
    """Download the recorded .deb files with `apt-get download NAME=VERSION` into ``workdir``,
    check each against its recorded size and sha256, and extract them all with `dpkg-deb -x`
    into ``workdir``/root, which is returned.  ``debs``: [(name, version, file name, bytes,
    sha256)].  Stops with an error naming the file when a download differs from the record."""
    import hashlib
    import subprocess

    root = os.path.join(workdir, "root")
    os.makedirs(root, exist_ok=True)
    for name, version, filename, size, sha256 in debs:
        subprocess.run(["apt-get", "download", "%s=%s" % (name, version)], cwd=workdir, check=True)
        path = os.path.join(workdir, filename)
        with open(path, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != size or digest != sha256:
            sys.exit(
                "%s: %d bytes, sha256 %s; expected %d bytes, sha256 %s" % (filename, len(data), digest, size, sha256)
            )
        subprocess.run(["dpkg-deb", "-x", path, root], check=True)
    return root


def package_root(argv, script, debs):
    """``out_dir`` for scripts that can fetch their packages: PKGROOT may be the word `fetch`,
    which downloads, checks and extracts ``debs`` (see ``fetch_packages``) into a temporary
    folder first.  Returns (package root, output folder, temporary folder or None)."""
    import tempfile

    if len(argv) >= 2 and argv[1] == "fetch":
        tmp = tempfile.mkdtemp(prefix="docsqa-")
        outdir = os.path.abspath(argv[2]) if len(argv) > 2 else os.path.dirname(os.path.abspath(script))
        return fetch_packages(debs, tmp), outdir, tmp
    root, outdir = out_dir(argv, script)
    return root, outdir, None
