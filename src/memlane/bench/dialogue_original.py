"""The original dialogue-query set: dated life events of eight people, and dialogue excerpts that need them.

Written for this project (``data/dialogue_original.json``), so it can be committed whole, text and labels. One
user scope holds every event, as the assistant of someone who keeps notes about the people they know would; each
event is added alone with its date. Queries are split by the person they are about, so no person's queries are
in both the tuning and the held-out split. The file states how queries and labels were written.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from memlane.bench.labelled import LATER_ROUNDS, LabelledMemory, LabelledQuery, LabelledSet
from memlane.errors import ValidationError

FIXTURE = Path(__file__).parent / "data" / "dialogue_original.json"
#: The second cohort: ten more people, written by other hands in the same style without knowing any result, in its
#: own fixture and store (so the first cohort's rounds keep their numbers).
FIXTURE2 = Path(__file__).parent / "data" / "dialogue_original2.json"
#: The third cohort: ten more people by two more writers, after the follow-up rule was chosen (see its "written").
FIXTURE3 = Path(__file__).parent / "data" / "dialogue_original3.json"
#: ``memlane bench dialogue --set NAME``: the bundled sets of this kind.
FIXTURES: dict[str, Path] = {"original": FIXTURE, "original2": FIXTURE2, "original3": FIXTURE3}
#: The one user scope every event is stored in and every query searches.
SCOPE = "notes"


def load_dialogue_original(path: Path = FIXTURE) -> LabelledSet:
    """The events and queries of the original set, checked for well-formed labels and disjoint splits."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        tune = set(doc["split"]["tune"])
        holdout = set(doc["split"]["holdout"])
        memories = [
            LabelledMemory(
                mid=str(m["id"]),
                scope=SCOPE,
                session=str(m["id"]),
                role="user",
                content=str(m["text"]),
                timestamp=datetime.strptime(str(m["date"]), "%Y-%m-%d").replace(tzinfo=UTC),
            )
            for m in doc["memories"]
        ]
        queries: list[LabelledQuery] = []
        for q in doc["queries"]:
            person = str(q["person"])
            split: Literal["tune", "holdout", "holdout2", "holdout3", "holdout4"] = (
                "tune" if person in tune else "holdout"
            )
            if person not in tune | holdout:
                raise ValidationError(f"{path.name}: {person!r} is in no split")
            if q.get("split") in LATER_ROUNDS:
                # later held-out rounds: new queries over the held-out people, reported on their own
                if person not in holdout:
                    raise ValidationError(f"{path.name}: {q['qid']} is in {q['split']} but {person!r} is not held out")
                split = q["split"]
            elif "split" in q:
                raise ValidationError(f"{path.name}: {q['qid']} has unknown split {q['split']!r}")
            queries.append(
                LabelledQuery(
                    qid=str(q["qid"]),
                    scope=SCOPE,
                    text=str(q["text"]),
                    evidence=tuple(str(e) for e in q["evidence"]),
                    split=split,
                    kind=str(q.get("kind", "")),
                    group=person,
                )
            )
        rules = [str(r) for r in doc.get("rule", [])]
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"malformed dialogue fixture {path}: {exc!r}") from None
    if tune & holdout:
        raise ValidationError(f"{path.name}: people in both splits: {sorted(tune & holdout)}")
    evalset = LabelledSet(
        name=str(doc.get("name", "dialogue-original")),
        description=str(doc.get("description", "")),
        memories=memories,
        queries=queries,
        source=f"written for memlane ({path.name})",
        notes=rules,
    )
    evalset.validate()
    return evalset
