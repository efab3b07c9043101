"""The technical set: error messages and how-to questions over Python's own documentation, split into passages.

The passages are the "topics" of the Python documentation that ship with CPython (``pydoc_data.topics.topics``,
the text ``help()`` shows offline; Python Software Foundation License), split by ``split_topic`` into passages of
up to ``MAX_CHARS`` characters. The text differs between Python versions, so the passages are committed in
``data/technical.json`` as built from one version (named in the file), beside the queries written for this
project: error messages and tracebacks a user would paste, "how do I ..." questions, and questions naming exact
identifiers, each labelled with the passages that answer it (the labelling rule is in the file and in
docs/evaluation.md). Every passage is one memory, added alone and all in one scope; queries are split by the
topic of their first label, so no topic's queries are on both sides.
"""

from __future__ import annotations

import functools
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from memlane.bench.labelled import LabelledMemory, LabelledQuery, LabelledSet
from memlane.errors import ValidationError

FIXTURE = Path(__file__).parent / "data" / "technical.json"
#: The one user scope every passage is stored in and every query searches.
SCOPE = "pydocs"
#: A passage grows paragraph by paragraph until it reaches ``TARGET_CHARS``; none exceeds ``MAX_CHARS``.
TARGET_CHARS = 300
MAX_CHARS = 1500
#: Every passage gets this timestamp: documentation has no date that matters to its retrieval.
STAMP = datetime(2024, 1, 1, tzinfo=UTC)

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def split_topic(text: str, *, target: int = TARGET_CHARS, cap: int = MAX_CHARS) -> list[str]:
    """Split one topic's text into passages: paragraphs (blank-line separated) packed in order until a passage
    reaches ``target`` characters, never past ``cap``; a paragraph longer than ``cap`` is cut at line ends.
    """
    pieces: list[str] = []
    for para in (p.strip("\n") for p in _PARAGRAPH_BREAK.split(text)):
        if not para.strip():
            continue
        while len(para) > cap:
            cut = para.rfind("\n", 0, cap)
            cut = cut if cut > 0 else cap
            pieces.append(para[:cut])
            para = para[cut:].lstrip("\n")
        pieces.append(para)
    out: list[str] = []
    current = ""
    for piece in pieces:
        if current and (len(current) >= target or len(current) + 2 + len(piece) > cap):
            out.append(current)
            current = piece
        else:
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


def build_passages(topics: dict[str, str] | None = None) -> list[dict[str, str]]:
    """The passages of every topic, in sorted topic order: ``{"id": "TOPIC#N", "topic": TOPIC, "text": ...}``."""
    if topics is None:
        from pydoc_data.topics import topics as bundled

        topics = dict(bundled)
    return [
        {"id": f"{topic}#{i}", "topic": topic, "text": text}
        for topic in sorted(topics)
        for i, text in enumerate(split_topic(topics[topic]))
    ]


def topic_of(passage_id: str) -> str:
    """The topic a passage id (``TOPIC#N``) belongs to."""
    return passage_id.rsplit("#", 1)[0]


@functools.cache
def _norm(text: str) -> str:
    """Whitespace collapsed and case folded (cached: the same passages are compared with every query's answers)."""
    return " ".join(text.split()).lower()


def label_passages(answers: list[str], passages: list[dict[str, str]]) -> list[str]:
    """The labelling rule made mechanical: every passage whose text (whitespace collapsed, case folded) contains
    one of ``answers``, the sentences that answer the query, in passage order. The topics overlap (``compound``
    repeats ``try``, ``specialnames`` repeats ``customization``), so one answer often labels several copies.
    """
    wanted = [_norm(a) for a in answers]
    return [p["id"] for p in passages if any(a in _norm(p["text"]) for a in wanted)]


def query_topic(evidence: list[str], passages: list[dict[str, str]]) -> str:
    """The topic a query is about: of its first answer's passages, the topic with the fewest passages (the
    specific one, ``try`` rather than ``compound``, which repeats it).
    """
    sizes: dict[str, int] = {}
    for p in passages:
        sizes[p["topic"]] = sizes.get(p["topic"], 0) + 1
    return min({topic_of(e) for e in evidence}, key=lambda t: (sizes[t], t))


def load_technical(path: Path = FIXTURE) -> LabelledSet:
    """The passages and queries of the technical set, checked for well-formed labels and disjoint splits."""
    try:
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        tune = set(doc["split"]["tune"])
        memories = [
            LabelledMemory(
                mid=str(p["id"]),
                scope=SCOPE,
                session=str(p["id"]),
                role="user",
                content=str(p["text"]),
                timestamp=STAMP,
            )
            for p in doc["passages"]
        ]
        topics = {str(p["topic"]) for p in doc["passages"]}
        queries: list[LabelledQuery] = []
        for q in doc["queries"]:
            evidence = tuple(str(e) for e in q["evidence"])
            if not evidence:
                raise ValidationError(f"{path.name}: query {q['qid']!r} has no label")
            group = str(q["topic"])
            split: Literal["tune", "holdout"] = "tune" if group in tune else "holdout"
            queries.append(
                LabelledQuery(
                    qid=str(q["qid"]),
                    scope=SCOPE,
                    text=str(q["text"]),
                    evidence=evidence,
                    split=split,
                    kind=str(q.get("kind", "")),
                    group=group,
                )
            )
        rules = [str(r) for r in doc.get("rule", [])]
        source = str(doc.get("source", ""))
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"malformed technical fixture {path}: {exc!r}") from None
    unknown = tune - topics
    if unknown:
        raise ValidationError(f"{path.name}: tune topics that are no topic: {sorted(unknown)}")
    evalset = LabelledSet(
        name="technical",
        description=str(doc.get("description", "")),
        memories=memories,
        queries=queries,
        source=source,
        notes=rules,
    )
    evalset.validate()
    return evalset
