"""Grounded observations: tags parsed into typed entities, labels consistent across windows, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlane import Memory
from memlane.errors import ValidationError
from memlane.observe import parse_caption, read_observations


def test_parse_caption_renders_names_and_keeps_typed_tags() -> None:
    parsed = parse_caption(
        "[person_1:Person] puts the [mug_2:Object] in the [sink_1:Object] next to [cat_1:Animal]",
        {"person_1": "Dana", "cat_1": "Miso"},
        {},
    )
    assert parsed.text == "Dana puts the mug_2 in the sink_1 next to Miso (cat_1)"
    assert [(t.label, t.kind, t.entity) for t in parsed.tags] == [
        ("person_1", "person", "dana"),
        ("mug_2", "object", "mug_2"),
        ("sink_1", "object", "sink_1"),
        ("cat_1", "animal", "miso"),
    ]


def test_observe_stores_typed_entities_media_and_window() -> None:
    with Memory(":memory:", embedder="hash") as m:
        result = m.observe(
            {
                "caption": "[person_1:Person] puts the [mug_2:Object] in the [sink_1:Object]",
                "timestamp": "2026-03-02T07:20:00Z",
                "end": "2026-03-02T07:20:10Z",
                "media": "frames/070200.jpg",
                "stream": "kitchen",
                "names": {"person_1": "Dana"},
            },
            user_id="home",
        )
        [item] = result.items
        assert item.role == "observation" and item.speaker is None and item.session_id == "kitchen"
        assert {"dana", "mug_2", "sink_1"} <= set(item.entities)
        assert item.metadata["media"] == "frames/070200.jpg"
        assert item.event_end is not None and (item.event_end - item.timestamp).total_seconds() == 10
        kinds = {r.alias: (r.target, r.kind) for r in m._store.entity_aliases("home")}
        assert kinds["person_1"] == ("dana", "person") and kinds["mug_2"] == ("mug_2", "object")
        again = m.observe(
            {"caption": "[person_1:Person] puts the [mug_2:Object] in the [sink_1:Object]",
             "timestamp": "2026-03-02T07:20:00Z", "end": "2026-03-02T07:20:10Z", "media": "frames/070200.jpg",
             "stream": "kitchen", "names": {"person_1": "Dana"}},
            user_id="home",
        )  # fmt: skip
        assert again.duplicates == [item.id]


def test_a_label_keeps_its_entity_in_later_windows_and_calls() -> None:
    with Memory(":memory:", embedder="hash") as m:
        m.observe({"caption": "[person_1:Person] waves", "timestamp": "2026-03-02T07:00:00Z",
                   "names": {"person_1": "Dana"}}, user_id="home")  # fmt: skip
        later = m.observe({"caption": "[person_1:Person] sits down", "timestamp": "2026-03-03T07:00:00Z"},
                          user_id="home").items[0]  # fmt: skip
        assert later.text == "person_1 sits down" and "dana" in later.entities


def test_overlapping_windows_must_agree_on_a_label_and_nothing_is_written_otherwise() -> None:
    with Memory(":memory:", embedder="hash") as m:
        with pytest.raises(ValidationError, match="overlapping windows"):
            m.observe(
                [
                    {"caption": "[obj_1:Object] falls", "timestamp": "2026-03-02T07:00:00Z",
                     "end": "2026-03-02T07:00:10Z", "stream": "cam"},
                    {"caption": "[obj_1:Animal] runs", "timestamp": "2026-03-02T07:00:05Z",
                     "end": "2026-03-02T07:00:15Z", "stream": "cam"},
                ],
                user_id="home",
            )  # fmt: skip
        assert m.stats(user_id="home").memories == 0
        # the same label with another type in a later, separate window is a new sighting, not a conflict
        m.observe(
            [
                {"caption": "[obj_1:Object] falls", "timestamp": "2026-03-02T07:00:00Z", "stream": "cam"},
                {"caption": "[obj_1:Animal] runs", "timestamp": "2026-03-02T09:00:00Z", "stream": "cam"},
            ],
            user_id="home",
        )
        assert m.stats(user_id="home").memories == 2


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"caption": "", "timestamp": "2026-03-02T07:00:00Z"}, "caption"),
        ({"caption": "x", "timestamp": "not a time"}, "timestamp"),
        ({"caption": "x", "timestamp": "2026-03-02T07:00:00Z", "colour": "red"}, "colour"),
        ({"caption": "x", "timestamp": "2026-03-02T07:00:00Z", "end": "2026-03-01T07:00:00Z"}, "ends before"),
    ],
)
def test_bad_observations_are_refused_by_name(bad: dict[str, object], message: str) -> None:
    with Memory(":memory:", embedder="hash") as m, pytest.raises(ValidationError, match=message):
        m.observe([bad], user_id="home")


def test_read_observations_names_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "obs.jsonl"
    path.write_text(json.dumps({"caption": "x", "timestamp": "2026-03-02T07:00:00Z"}) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="line 2"):
        read_observations(path)
