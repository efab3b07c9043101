"""``memlane bench ask``: ``Memory.ask`` on the household scenario (frames + chat), accuracy per question kind;
and on LoCoMo, how many questions the structured layer claims and how often its answer matches the gold one.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, Field

from memlane.answer.ask import Answer
from memlane.bench.common import machine
from memlane.bench.locomo_data import CATEGORY_NAMES, LocomoConversation, load_locomo, select_split
from memlane.config import Config
from memlane.engine import Memory
from memlane.models import Message
from memlane.observe import Observation, read_observations

DATA: Final = Path(__file__).parent / "data" / "ask"
#: The scenario's "now": the morning after its week.
SCENARIO_NOW: Final = datetime(2026, 3, 9, 9, 0, tzinfo=UTC)
SCENARIO_USER: Final = "household"
Scoring = Literal["number", "yesno", "date", "set", "contains", "label", "lookup"]


class ScenarioQuestion(BaseModel):
    """One question of the scenario, its kind, how it is scored, and its answer."""

    question: str
    kind: str
    score: Scoring
    answer: Any


class AskRow(BaseModel):
    """One question as ``ask`` answered it."""

    question: str
    kind: str
    route: str
    reason: str
    expected: Any
    got: Any
    correct: bool


class KindScore(BaseModel):
    """Accuracy of one question kind."""

    kind: str
    questions: int
    correct: int
    structured: int = Field(description="questions routed to a structured query")

    @property
    def accuracy(self) -> float:
        return self.correct / self.questions if self.questions else 0.0


class LocomoCase(BaseModel):
    """A LoCoMo question the structured layer claimed, its gold and structured answers.

    ``question`` and ``gold`` are LoCoMo's text (CC BY-NC): shown when the benchmark runs, left out of saved results.
    """

    qid: str
    category: str
    question: str = ""
    rule: str
    gold: str = ""
    got: str
    correct: bool


class AskReport(BaseModel):
    """The scenario's per-kind accuracy and, when run, the LoCoMo structured-layer figures."""

    embedder: str
    machine: str
    kinds: list[KindScore]
    rows: list[AskRow]
    locomo_questions: int = 0
    locomo_claimed: list[LocomoCase] = Field(default_factory=list)
    command: str = ""


# -- the scenario -----------------------------------------------------------------------------------------------------
def load_scenario(root: Path = DATA) -> tuple[list[Observation], list[dict[str, Any]], list[ScenarioQuestion]]:
    """The scenario's frames, chat sessions and questions."""
    frames = read_observations(root / "household_frames.jsonl")
    sessions = json.loads((root / "conversation.json").read_text(encoding="utf-8"))
    lines = (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [ScenarioQuestion.model_validate_json(line) for line in lines if line.strip()]
    return frames, sessions, questions


def ingest_scenario(memory: Memory, user_id: str = SCENARIO_USER, root: Path = DATA) -> list[ScenarioQuestion]:
    """Observe the frames and add the chat sessions; returns the questions."""
    frames, sessions, questions = load_scenario(root)
    memory.observe(frames, user_id=user_id)
    for s in sessions:
        messages = [Message.model_validate(m) for m in s["messages"]]
        memory.add(messages, user_id=user_id, session_id=s["session_id"], timestamp=s["timestamp"])
    return questions


def _norm(text: object) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", str(text).casefold()).split())


def score(q: ScenarioQuestion, answer: Answer) -> tuple[Any, bool]:
    """What ``answer`` says in the question's terms, and whether that is the expected answer."""
    s = answer.structured
    if q.score == "lookup":
        texts = " ".join(h.memory.text for h in answer.hits[:3]).casefold()
        return texts[:200], all(str(k).casefold() in texts for k in q.answer)
    if s is None:
        return None, False
    if q.score == "number":
        return s.value, s.value == q.answer
    if q.score == "yesno":
        got = s.answer.split(":")[0].strip().lower()
        return got, got == q.answer
    if q.score == "date":
        return s.value, s.value == q.answer
    if q.score == "set":
        names = sorted(_norm(v) for v in (s.value if isinstance(s.value, list) else []))
        return names, names == sorted(_norm(v) for v in q.answer)
    if q.score == "label":
        return s.answer, _norm(s.answer) == _norm(q.answer)
    text = (s.answer + " " + " ".join(m.text for m in s.memories)).casefold()
    return s.answer[:200], all(str(k).casefold() in text for k in q.answer)


def run_scenario(memory: Memory, questions: Sequence[ScenarioQuestion], user_id: str = SCENARIO_USER) -> list[AskRow]:
    """Ask every question and score it."""
    rows: list[AskRow] = []
    for q in questions:
        answer = memory.ask(q.question, user_id=user_id, now=SCENARIO_NOW, top_k=10)
        got, correct = score(q, answer)
        rows.append(
            AskRow(
                question=q.question,
                kind=q.kind,
                route=answer.route,
                reason=answer.reason,
                expected=q.answer,
                got=got,
                correct=correct,
            )
        )
    return rows


def kind_scores(rows: Sequence[AskRow]) -> list[KindScore]:
    """Accuracy per question kind, in the order kinds first appear."""
    out: dict[str, KindScore] = {}
    for r in rows:
        k = out.setdefault(r.kind, KindScore(kind=r.kind, questions=0, correct=0, structured=0))
        k.questions += 1
        k.correct += int(r.correct)
        k.structured += int(r.route == "structured")
    return list(out.values())


# -- LoCoMo -----------------------------------------------------------------------------------------------------------
_NUMBERS: Final = {
    "once": "1", "one": "1", "twice": "2", "two": "2", "three": "3", "thrice": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}  # fmt: skip


def normalise_answer(text: str) -> str:
    """Case, punctuation, articles and number words normalised (``"Twice."`` -> ``"2"``)."""
    words = [_NUMBERS.get(w, w) for w in _norm(text).split() if w not in ("a", "an", "the", "times", "time")]
    return " ".join(words)


def _date_forms(value: str) -> set[str]:
    try:
        day = datetime.fromisoformat(value)
    except ValueError:
        return set()
    return {normalise_answer(day.strftime(f)) for f in ("%-d %B %Y", "%B %-d %Y", "%-d %B, %Y", "%B %Y")}


def locomo_match(gold: str, answer: Answer) -> tuple[str, bool]:
    """Whether the structured answer matches LoCoMo's free-text gold answer after normalisation."""
    s = answer.structured
    assert s is not None
    g = normalise_answer(gold)
    if isinstance(s.value, bool) or s.answer.startswith(("yes", "no")):
        got = s.answer.split(":")[0]
        return got, g.split()[:1] == [got]
    if isinstance(s.value, int):
        return str(s.value), g.split()[:1] == [str(s.value)] or g == str(s.value)
    if isinstance(s.value, list):
        got_items = {normalise_answer(v) for v in s.value}
        gold_items = {normalise_answer(p) for p in re.split(r",| and ", gold) if p.strip()}
        return ", ".join(s.value), bool(gold_items) and gold_items <= got_items
    if isinstance(s.value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", s.value):
        return s.value, any(f in g or g in f for f in _date_forms(s.value))
    return s.answer[:200], bool(g) and g in normalise_answer(s.answer)


def ingest_locomo_turns(memory: Memory, conv: LocomoConversation) -> None:
    """Each turn's text as a message, and a shared photo's caption as an observation attached to its turn."""
    by_session: dict[int, list[Any]] = {}
    for turn in conv.turns:
        by_session.setdefault(turn.session, []).append(turn)
    for session, turns in sorted(by_session.items()):
        messages = [
            Message(role="user", name=t.speaker, content=t.text, timestamp=t.timestamp, metadata={"dia_id": t.dia_id})
            for t in turns
        ]
        result = memory.add(messages, user_id=conv.conv_id, session_id=f"session_{session}", infer=False)
        photos = [
            Observation(
                caption=f"photo shared by {t.speaker}: {t.caption}",
                timestamp=t.timestamp,
                media=t.media,
                subject=t.speaker,
                attached_to=item.id,
                metadata={"dia_id": t.dia_id},
            )
            for t, item in zip(turns, result.items, strict=True)
            if t.caption
        ]
        if photos:
            memory.observe(photos, user_id=conv.conv_id, session_id=f"session_{session}")


def run_locomo_structured(memory: Memory, data: Path, split: str = "all") -> tuple[int, list[LocomoCase]]:
    """Ingest LoCoMo (turns + photo observations) and run ``ask`` on categories 1-4; the cases it claimed."""
    convs = select_split(load_locomo(data).conversations, split)
    gold = _gold_answers(data)
    total = 0
    cases: list[LocomoCase] = []
    for conv in convs:
        ingest_locomo_turns(memory, conv)
        last = max(t.timestamp for t in conv.turns)
        for q in conv.questions:
            if q.category not in (1, 2, 3, 4):
                continue
            total += 1
            answer = memory.ask(q.question, user_id=conv.conv_id, now=last, top_k=5)
            if answer.structured is None:
                continue
            expected = gold.get(q.qid, "")
            got, correct = locomo_match(expected, answer)
            cases.append(
                LocomoCase(
                    qid=q.qid,
                    category=CATEGORY_NAMES[q.category],
                    question=q.question,
                    rule=answer.reason,
                    gold=expected,
                    got=got,
                    correct=correct,
                )
            )
    return total, cases


def _gold_answers(data: Path) -> dict[str, str]:
    samples = json.loads(Path(data).read_text(encoding="utf-8"))
    return {f"{s['sample_id']}:q{i}": str(qa.get("answer", "")) for s in samples for i, qa in enumerate(s["qa"])}


def run_ask_bench(*, embedder: str | None = None, locomo: Path | None = None, split: str = "all") -> AskReport:
    """The scenario (always) and LoCoMo (when a path is given), each in its own temporary store, offline."""
    config = Config.from_env()
    with tempfile.TemporaryDirectory(prefix="memlane-ask-") as tmp:
        with Memory(Path(tmp) / "scenario.db", embedder=embedder or config.embedder, config=config) as memory:
            questions = ingest_scenario(memory)
            rows = run_scenario(memory, questions)
            identity = memory.embedder.identity
        report = AskReport(embedder=identity, machine=machine(), kinds=kind_scores(rows), rows=rows)
        if locomo is not None:
            with Memory(Path(tmp) / "locomo.db", embedder=embedder or config.embedder, config=config) as memory:
                report.locomo_questions, report.locomo_claimed = run_locomo_structured(memory, locomo, split)
    return report


_SHAPE_ONLY = re.compile(r"\d+|yes|no|\d{4}-\d{2}-\d{2}")


def saved_json(report: AskReport) -> str:
    """The report as JSON to keep in the repository: LoCoMo's questions, answers, turn texts and the names drawn
    from them left out (its licence); only answers that are a count, yes/no or a date stay.
    """
    kept = report.model_copy(
        update={
            "locomo_claimed": [
                c.model_copy(update={"question": "", "gold": "", "got": "(LoCoMo text not kept)"})
                if not _SHAPE_ONLY.fullmatch(c.got.strip().lower())
                else c.model_copy(update={"question": "", "gold": ""})
                for c in report.locomo_claimed
            ]
        }
    )
    return kept.model_dump_json(indent=1)


def render(report: AskReport, *, cases: int = 40) -> str:
    """The report as Markdown text."""
    lines = [
        "| kind | questions | correct | accuracy | routed to a structured query |",
        "| --- | --- | --- | --- | --- |",
    ]
    total = correct = 0
    for k in report.kinds:
        lines.append(f"| {k.kind} | {k.questions} | {k.correct} | {k.accuracy:.2f} | {k.structured} |")
        total, correct = total + k.questions, correct + k.correct
    lines.append(f"| **all** | {total} | {correct} | {correct / total if total else 0:.2f} | |")
    wrong = [r for r in report.rows if not r.correct]
    if wrong:
        lines += ["", "Missed:", ""]
        lines += [f"- [{r.kind}] {r.question} — expected {r.expected!r}, got {r.got!r} ({r.reason})" for r in wrong]
    if report.locomo_questions:
        claimed = report.locomo_claimed
        right = sum(c.correct for c in claimed)
        lines += [
            "",
            f"LoCoMo categories 1-4: the structured layer claimed {len(claimed)} of {report.locomo_questions} "
            f"questions; {right} of those ({right / len(claimed) if claimed else 0:.2f}) match the gold answer "
            "after normalisation.",
            "",
            "| question | category | gold | structured answer | match |",
            "| --- | --- | --- | --- | --- |",
        ]
        for c in claimed[:cases]:
            cell = c.got.replace("|", "/")[:80]
            question = c.question.replace("|", "/") or f"{c.qid} ({c.rule})"
            gold = c.gold.replace("|", "/")[:60] or "(LoCoMo text not kept)"
            lines.append(f"| {question} | {c.category} | {gold} | {cell} | {'yes' if c.correct else 'no'} |")
    return "\n".join(lines)
