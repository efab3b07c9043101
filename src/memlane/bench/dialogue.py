"""The dialogue-query set derived from LoCoMo: dialogue excerpts as queries over dated event descriptions.

Memories are LoCoMo's ``observation`` items (short third-person descriptions of what happened or was said, each
citing its source turns), each added alone (its own ``add`` call and session) with its session's date. A query is the few turns of conversation
just before the first turn that holds a question's evidence, followed by the question as the last line: a
dialogue excerpt ending where a stored memory becomes relevant. A query's labels are the observations that cite
one of its evidence turns.

LoCoMo is CC BY-NC, so no LoCoMo text is committed: ``data/dialogue_locomo.json`` holds only ids (question index,
anchor turn, observation ids), and the text is read from the user's LoCoMo file at run time. ``derive_specs``
rebuilds the committed file from the data, and a test checks that the two agree.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memlane.bench.labelled import LabelledMemory, LabelledQuery, LabelledSet
from memlane.bench.locomo_data import (
    CATEGORY_NAMES,
    TUNE_SPLIT,
    LocomoConversation,
    load_locomo,
    parse_session_time,
)
from memlane.errors import ValidationError

SPECS = Path(__file__).parent / "data" / "dialogue_locomo.json"
#: Turns of conversation before the anchor turn that a query shows, and the fewest it may show.
CONTEXT_TURNS = 4
MIN_CONTEXT_TURNS = 2
#: LoCoMo categories with an answer in the conversation (5, adversarial, has none).
ANSWERED_CATEGORIES = (1, 2, 3, 4)

_DIA = re.compile(r"D:?(\d+):0*(\d+)")
_OBS_KEY = re.compile(r"session_(\d+)_observation")


@dataclass(frozen=True)
class Observation:
    """One observation: its id (``conv:S<session>:<index>``), text, session date and the turns it cites."""

    oid: str
    session: int
    text: str
    timestamp_text: str
    cites: tuple[str, ...]


@dataclass(frozen=True)
class QuerySpec:
    """A committed query: which LoCoMo question, the turn its excerpt ends before, and its observation labels."""

    qid: str
    conv: str
    question: int
    category: int
    anchor: str
    context: int
    evidence: tuple[str, ...]


def _dia(raw: str) -> str | None:
    m = _DIA.fullmatch(raw.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else None


def observations(sample: dict[str, Any]) -> list[Observation]:
    """The observations of one LoCoMo sample, in file order, with ids stable for that file."""
    conv = str(sample["sample_id"])
    body = sample["conversation"]
    out: list[Observation] = []
    for key, by_speaker in sample.get("observation", {}).items():
        m = _OBS_KEY.fullmatch(key)
        if m is None or not isinstance(by_speaker, dict):
            continue
        n = int(m.group(1))
        when = str(body[f"session_{n}_date_time"])
        index = 0
        for items in by_speaker.values():
            for text, cites in items:
                raw = cites if isinstance(cites, list) else [cites]
                dias = tuple(d for d in (_dia(str(c)) for c in raw) if d is not None)
                out.append(Observation(f"{conv}:S{n}:{index}", n, str(text), when, dias))
                index += 1
    return out


def derive_specs(data: Path) -> list[QuerySpec]:
    """Every query the rule gives on a LoCoMo file: answered questions whose evidence turns each have an
    observation and whose first evidence turn has at least ``MIN_CONTEXT_TURNS`` turns before it.
    """
    raw = _read_samples(data)
    convs = {c.conv_id: c for c in load_locomo(data).conversations}
    specs: list[QuerySpec] = []
    for sample in raw:
        conv = convs[str(sample["sample_id"])]
        obs = observations(sample)
        position = {t.dia_id: i for i, t in enumerate(conv.turns)}
        for q in conv.questions:
            if q.category not in ANSWERED_CATEGORIES or not q.evidence:
                continue
            labels = [o.oid for o in obs if set(o.cites) & set(q.evidence)]
            covered = {d for o in obs for d in o.cites if d in q.evidence}
            if covered != set(q.evidence):
                continue  # an evidence turn no observation describes: the labels would be incomplete
            first = min(position[d] for d in q.evidence)
            context = min(CONTEXT_TURNS, first)
            if context < MIN_CONTEXT_TURNS:
                continue
            specs.append(
                QuerySpec(
                    qid=q.qid,
                    conv=conv.conv_id,
                    question=int(q.qid.rsplit(":q", 1)[1]),
                    category=q.category,
                    anchor=conv.turns[first].dia_id,
                    context=context,
                    evidence=tuple(labels),
                )
            )
    return specs


def _read_samples(data: Path) -> list[dict[str, Any]]:
    try:
        samples = json.loads(Path(data).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValidationError(f"cannot read LoCoMo data {data}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{data} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(samples, list):
        raise ValidationError(f"{data} is not a LoCoMo file: expected a JSON list of conversations")
    return samples


def write_specs(specs: list[QuerySpec], path: Path = SPECS) -> None:
    """Write the committed fixture: the rule, the split, and the query specs (ids only, no LoCoMo text)."""
    doc = {
        "name": "dialogue-locomo",
        "description": (
            "Dialogue excerpts (the turns before a LoCoMo question's first evidence turn, then the question) "
            "over LoCoMo's observations stored as dated event descriptions."
        ),
        "licence_note": "Ids only: LoCoMo is CC BY-NC and its text is read from the user's copy at run time.",
        "rule": [
            f"Questions of categories {', '.join(map(str, ANSWERED_CATEGORIES))} whose every evidence turn is cited "
            "by at least one observation.",
            f"The excerpt is the {CONTEXT_TURNS} turns before the first evidence turn in conversation order "
            f"(crossing session boundaries), at least {MIN_CONTEXT_TURNS}, each as 'Speaker: text'; then the "
            "question as the last line.",
            "Labels: every observation that cites one of the question's evidence turns.",
        ],
        "split": {"by": "conversation", "tune": list(TUNE_SPLIT)},
        "queries": [{**asdict(s), "evidence": list(s.evidence)} for s in specs],
    }
    path.write_text(json.dumps(doc, indent=None, separators=(",", ":")).replace('},{"qid"', '},\n{"qid"') + "\n")


def read_specs(path: Path = SPECS) -> list[QuerySpec]:
    """The committed query specs."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return [
            QuerySpec(
                qid=str(q["qid"]),
                conv=str(q["conv"]),
                question=int(q["question"]),
                category=int(q["category"]),
                anchor=str(q["anchor"]),
                context=int(q["context"]),
                evidence=tuple(str(e) for e in q["evidence"]),
            )
            for q in doc["queries"]
        ]
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"malformed dialogue query fixture {path}: {exc!r}") from None


def _query_text(conv: LocomoConversation, spec: QuerySpec, question: str) -> str:
    position = {t.dia_id: i for i, t in enumerate(conv.turns)}
    if spec.anchor not in position:
        raise ValidationError(f"{spec.qid}: anchor turn {spec.anchor} is not in the LoCoMo file")
    end = position[spec.anchor]
    turns = conv.turns[end - spec.context : end]
    return "\n".join([*(f"{t.speaker}: {t.content}" for t in turns), question])


def load_dialogue_locomo(data: Path, specs_path: Path = SPECS) -> LabelledSet:
    """The derived set on a LoCoMo file: observations of the conversations the specs use, and their queries."""
    specs = read_specs(specs_path)
    raw = {str(s["sample_id"]): s for s in _read_samples(data)}
    convs = {c.conv_id: c for c in load_locomo(data).conversations}
    wanted = list(dict.fromkeys(s.conv for s in specs if s.conv in convs))
    if not wanted:
        raise ValidationError(f"{data} holds none of the conversations the dialogue queries use")
    memories: list[LabelledMemory] = []
    for conv_id in wanted:
        for o in observations(raw[conv_id]):
            memories.append(
                LabelledMemory(
                    mid=o.oid,
                    scope=conv_id,
                    session=o.oid,  # added alone: a standalone event, no neighbours in a session
                    role="user",
                    content=o.text,
                    timestamp=parse_session_time(o.timestamp_text),
                )
            )
    queries: list[LabelledQuery] = []
    for spec in specs:
        conv = convs.get(spec.conv)
        if conv is None:
            continue
        try:
            question = conv.questions[spec.question]
        except IndexError:
            raise ValidationError(f"{spec.qid}: question {spec.question} is not in the LoCoMo file") from None
        queries.append(
            LabelledQuery(
                qid=spec.qid,
                scope=spec.conv,
                text=_query_text(conv, spec, question.question),
                evidence=spec.evidence,
                split="tune" if spec.conv in TUNE_SPLIT else "holdout",
                kind=CATEGORY_NAMES[spec.category],
            )
        )
    evalset = LabelledSet(
        name="dialogue-locomo",
        description="LoCoMo dialogue excerpts ending in a question, over LoCoMo observations as dated events",
        memories=memories,
        queries=queries,
        source=f"LoCoMo (CC BY-NC), {data}; query ids in {specs_path.name}",
    )
    evalset.validate()
    return evalset
