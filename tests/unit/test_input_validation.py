"""Regression tests for the input-validation layer: each bad input of the bug report is a ValidationError that
names the field and the limit, and nothing is written."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memlane import Config, Memory
from memlane.embedding.fake import HashEmbedder
from memlane.errors import (
    ConfigError,
    ImportFormatError,
    MemlaneError,
    MissingScopeError,
    NotFoundError,
    ValidationError,
)
from memlane.lifecycle.locks import Leases
from memlane.models import Job, MemoryItem, MemoryKind, parse_time, utcnow
from memlane.security.terminal import json_safe, one_line, printable
from memlane.security.validation import Limits, check_metadata
from memlane.worker import JobWorker


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    config = Config(data_dir=tmp_path / "home", embedder="hash", infer=False, background_worker=False)
    m = Memory(tmp_path / "m.db", embedder=HashEmbedder(dim=32), config=config)
    yield m
    m.close()


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def everything(memory: Memory) -> list[dict[str, Any]]:
    return [it.model_dump() for it in memory._store.iter_items(None)]


ISSUE_CASES = [
    ("add", {"timestamp": "0001-01-01T00:00:00+01:00"}, "timestamp"),
    ("add", {"timestamp": "9999-12-31T23:59:59-05:00"}, "timestamp"),
    ("add", {"timestamp": 1e20}, "timestamp"),
    ("add", {"timestamp": float("nan")}, "timestamp"),
    ("add", {"messages": {"content": "x", "name": "\udc80"}}, "name"),
    ("add", {"messages": {"content": "x", "role": "\udc80"}}, "role"),
    ("add", {"messages": {"content": "x", "name": "n" * 1_000_000}}, "limit of 256"),
    ("add", {"messages": {"content": "x", "role": "r" * 1_000_000}}, "limit of 64"),
    ("add", {"metadata": nested(500)}, "limit of 32 levels"),
    ("add", {"metadata": {"big": 10**30}}, "64-bit"),
    ("add", {"messages": ["x"] * 10_001}, "limit of 10000"),
    ("add", {"user_id": "\udc80"}, "user_id"),
    ("add", {"session_id": "s\x1b[31m"}, "control characters"),
    ("list", {"limit": 10**20}, "limit must be an integer from 0 to"),
    ("list", {"limit": "5"}, "limit must be an integer"),
    ("list", {"offset": -1}, "offset"),
    ("list", {"filters": {"since": 1e20}}, "filters.since"),
    ("list", {"filters": {"until": "0001-01-01T00:00:00+01:00"}}, "filters.until"),
    ("list", {"filters": {"metadata": {"k": 10**30}}}, "filters.metadata.k"),
    ("search", {"filters": {"as_of": "9999-12-31T23:59:59-05:00"}}, "filters.as_of"),
    ("search", {"top_k": 10**20}, "top_k"),
    ("search", {"filters": {"include_superseded": "true"}}, "include_superseded"),
    ("search", {"preset_name": ["x"]}, "preset_name"),
    ("get", {"memory_id": "\udc80"}, "memory_id"),
    ("delete", {"memory_id": "\ud800x"}, "memory_id"),
    ("update", {"importance": "0.5"}, "importance must be a number"),
    ("update", {"importance": float("nan")}, "importance"),
    ("update", {"metadata": nested(500)}, "limit of 32 levels"),
    ("jobs", {"limit": 10**20}, "limit"),
    ("reindex", {"batch_size": 0}, "batch_size"),
]


def call(memory: Memory, name: str, given: dict[str, Any], target: str) -> object:
    if name == "add":
        kwargs = {"messages": "hello", "user_id": "ana", **given}
        return memory.add(kwargs.pop("messages"), **kwargs)
    if name == "list":
        return memory.list(user_id="ana", **given)
    if name == "search":
        return memory.search("hello", user_id="ana", **given)
    if name in ("get", "delete"):
        return getattr(memory, name)(given["memory_id"], user_id="ana")
    if name == "update":
        return memory.update(target, user_id="ana", **given)
    if name == "jobs":
        return memory.jobs(user_id="ana", **given)
    if name == "reindex":
        return memory.reindex(**given)
    raise AssertionError(name)


@pytest.mark.parametrize(("name", "given", "match"), ISSUE_CASES)
def test_each_bad_input_is_a_validation_error_naming_the_field(memory: Memory, name, given, match) -> None:
    target = memory.add("the first memory", user_id="ana").items[0].id
    before = everything(memory)
    with pytest.raises(ValidationError, match=match):
        call(memory, name, given, target)
    assert everything(memory) == before


def test_parse_time_turns_calendar_overflow_into_value_error() -> None:
    for bad in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-05:00", 1e20, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            parse_time(bad)


def test_metadata_checks_do_not_recurse() -> None:
    with pytest.raises(ValidationError, match="deeper"):
        check_metadata(nested(100_000))
    deep_list: Any = 1
    for _ in range(100_000):
        deep_list = [deep_list]
    with pytest.raises(ValidationError, match="deeper"):
        check_metadata({"k": deep_list})
    assert check_metadata(nested(31)) == nested(31)
    with pytest.raises(ValidationError, match="bytes"):
        check_metadata({"k": "x" * 70_000})
    with pytest.raises(ValidationError, match="keys"):
        check_metadata({f"k{i}": i for i in range(1_001)})


def test_history_of_an_unknown_or_foreign_id_raises_not_found(memory: Memory) -> None:
    mine = memory.add("mine", user_id="ana").items[0].id
    theirs = memory.add("theirs", user_id="bob").items[0].id
    with pytest.raises(NotFoundError):
        memory.history("no-such-id", user_id="ana")
    with pytest.raises(NotFoundError):
        memory.history(theirs, user_id="ana")
    memory.delete(mine, user_id="ana")
    assert [e.event.value for e in memory.history(mine, user_id="ana")] == ["ADD", "DELETE"]


# -- import and export ---------------------------------------------------------------------------------------
def export_text(memory: Memory, user_id: str | None = None) -> str:
    buf = io.StringIO()
    memory.export(buf, user_id=user_id)
    return buf.getvalue()


def test_import_with_a_colliding_id_names_the_line_and_writes_nothing(memory: Memory, tmp_path: Path) -> None:
    source = Memory(":memory:", embedder=HashEmbedder(dim=32), config=memory.config)
    source.add([f"turn number {i}" for i in range(1_500)], user_id="ana")
    lines = export_text(source).splitlines()
    source.close()
    assert len(lines) == 1_501
    bobs = memory.add("Bob's own memory", user_id="bob").items[0].id
    row = json.loads(lines[1_201])  # file line 1,202
    row["id"] = bobs
    lines[1_201] = json.dumps(row)
    before = everything(memory)
    with pytest.raises(ImportFormatError, match=r"line 1202.*another user"):
        memory.import_(io.StringIO("\n".join(lines) + "\n"), user_id="carol")
    assert everything(memory) == before
    assert memory.list(user_id="carol") == []


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("user_id", "", "user_id"),
        ("user_id", "u" * 10_000, "user_id is 10000 characters"),
        ("text", "", "text is empty"),
        ("text", "x" * 1_000_000, "text is 1000000 characters"),
        ("speaker", "s" * 1_000, "speaker"),
        ("metadata", nested(40), "metadata"),
        ("access_count", 10**30, "access_count"),
        ("timestamp", "0001-01-01T00:00:00+01:00", "timestamp"),
    ],
)
def test_import_applies_the_rules_of_add_line_by_line(memory: Memory, field: str, value: Any, match: str) -> None:
    memory.add(["first", "second", "third"], user_id="ana")
    lines = export_text(memory).splitlines()
    row = json.loads(lines[2])
    row[field] = value
    lines[2] = json.dumps(row)
    target = Memory(":memory:", embedder=HashEmbedder(dim=32), config=memory.config)
    try:
        with pytest.raises(ImportFormatError, match=f"line 3: .*{match}"):
            target.import_(io.StringIO("\n".join(lines)), keep_user_ids=True)
        assert target.stats().memories == 0
    finally:
        target.close()


def test_import_writes_into_the_callers_user_not_the_files(memory: Memory) -> None:
    memory.add(["I adopted a beagle", "My sister lives in Porto"], user_id="ana")
    text = export_text(memory, "ana")
    assert memory.import_(io.StringIO(text), user_id="ana") == 0  # the same user: existing ids are skipped
    with pytest.raises(ImportFormatError, match="another user"):  # the ids are ana's
        memory.import_(io.StringIO(text), user_id="mallory")
    other = Memory(":memory:", embedder=HashEmbedder(dim=32), config=memory.config)
    try:
        assert other.import_(io.StringIO(text), user_id="carol") == 2
        assert other.list(user_id="ana") == []
        moved = other.list(user_id="carol")
        assert [it.text for it in moved] == ["I adopted a beagle", "My sister lives in Porto"]
        assert other.import_(io.StringIO(text), user_id="carol") == 0
        # the idempotency key moved with them: adding the same turn to carol is a duplicate
        assert other.add("I adopted a beagle", user_id="carol").duplicates == [moved[0].id]
        with pytest.raises(MissingScopeError):
            other.import_(io.StringIO(text))
        with pytest.raises(ValidationError, match="not both"):
            other.import_(io.StringIO(text), user_id="carol", keep_user_ids=True)
    finally:
        other.close()


def test_import_rejects_an_id_used_twice_in_the_file(memory: Memory) -> None:
    memory.add(["one", "two"], user_id="ana")
    lines = export_text(memory).splitlines()
    lines.append(lines[1])
    with pytest.raises(ImportFormatError, match=r"line 4: .*already used on line 2"):
        memory.import_(io.StringIO("\n".join(lines)), user_id="zed")


def test_import_and_export_paths_fail_as_validation_errors(memory: Memory, tmp_path: Path) -> None:
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00\x01garbage")
    (tmp_path / "adir").mkdir()
    with pytest.raises(ValidationError, match="No such file"):
        memory.import_(tmp_path / "missing.jsonl", user_id="u")
    with pytest.raises(ValidationError, match="directory"):
        memory.import_(tmp_path / "adir", user_id="u")
    with pytest.raises(ImportFormatError, match="line 1 is not valid UTF-8"):
        memory.import_(binary, user_id="u")
    with pytest.raises(ValidationError, match="No such file"):
        memory.export("/proc/nope/x.jsonl")
    with pytest.raises(ValidationError, match="directory"):
        memory.export(tmp_path / "adir")


def test_export_never_writes_what_import_rejects(memory: Memory, tmp_path: Path) -> None:
    memory.add("a good memory", user_id="ana")
    # A row written by an older version, past today's metadata depth limit, straight into the store.
    now = utcnow()
    legacy = MemoryItem(
        id="legacy",
        user_id="ana",
        text="deep one",
        timestamp=now,
        created_at=now,
        updated_at=now,
        content_hash="0" * 64,
        metadata=nested(500),
    )
    memory._store.insert([legacy], ["deep one"], memory.embedder.embed(["deep one"]))
    dest = tmp_path / "out.jsonl"
    with pytest.raises(ValidationError, match=r"memory 'legacy' cannot be exported: .*32 levels"):
        memory.export(dest)
    assert not dest.exists() and list(tmp_path.glob("*.tmp")) == []
    memory.delete("legacy", user_id="ana")
    assert memory.export(dest) == 1
    other = Memory(":memory:", embedder=HashEmbedder(dim=32), config=memory.config)
    try:
        assert other.import_(dest, keep_user_ids=True) == 1
    finally:
        other.close()


# -- the worker and the terminal ---------------------------------------------------------------------------
class _Store:
    def __init__(self, job: Job) -> None:
        self.job: Job | None = job
        self.finished: list[object] = []

    def claim_job(self, claim: object, is_dead: object) -> Job | None:
        job, self.job = self.job, None
        return job

    def renew_job(self, job_id: str, claim: object) -> bool:
        return True

    def finish_job(self, outcome: object) -> None:
        self.finished.append(outcome)

    def retry_job_later(self, job_id: str, owner: str, error: str, not_before: object) -> bool:
        self.finished.append((job_id, error))
        return True


@pytest.mark.parametrize(
    ("error", "one_line_only"), [(MemlaneError("the LLM is down"), True), (KeyError("bug"), False)]
)
def test_worker_logs_an_expected_job_failure_in_one_line(caplog, error: Exception, one_line_only: bool) -> None:
    now = utcnow()
    store = _Store(Job(id="j1", user_id="u", kind="extract", created_at=now, updated_at=now))

    def handler(job: Job) -> None:
        raise error

    worker = JobWorker(store, handler, leases=Leases(store), background=False)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="memlane.worker"):
        assert worker._run_one()
    [record] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert (record.exc_info is None) is one_line_only
    assert len(store.finished) == 1


def test_terminal_escapes() -> None:
    assert printable("a\x1b[31mred\x1b[0m\n\tz\x9b") == "a\\x1b[31mred\\x1b[0m\n\tz\\x9b"
    assert one_line("two\nlines\u202e") == "two\\nlines\\u202e"
    encoded = json.dumps({"t": "x\x1b\x9by\u2028"}, ensure_ascii=False)
    assert json.loads(json_safe(encoded)) == {"t": "x\x1b\x9by\u2028"}
    assert "\x9b" not in json_safe(encoded) and "\x1b" not in json_safe(encoded)


def test_limits_follow_the_config() -> None:
    limits = Limits.from_config(Config(max_id_chars=40, max_text_chars=20))
    assert (limits.id_chars, limits.text_chars) == (40, 20)


def test_the_id_limit_holds_the_ids_memlane_makes_and_the_environment_sets_both() -> None:
    with Memory(":memory:", embedder="hash", config=Config(max_id_chars=40)) as memory:
        assert memory.relations(user_id="ana", entity="e" * 40) == []
        with pytest.raises(ValidationError, match="entity is 41 characters, more than the limit of 40"):
            memory.relations(user_id="ana", entity="e" * 41)
    with pytest.raises(ConfigError, match="at least 32"):
        Config(max_id_chars=31)  # a memory's own id (32 characters) would be refused by every call naming it
    config = Config.from_env({"MEMLANE_MAX_TEXT_CHARS": "100000", "MEMLANE_MAX_ID_CHARS": "512"})
    assert (config.max_text_chars, config.max_id_chars) == (100_000, 512)
    for bad in ("0", "-5", "1e5", "many"):
        with pytest.raises(ConfigError, match="MEMLANE_MAX_TEXT_CHARS must be a positive integer"):
            Config.from_env({"MEMLANE_MAX_TEXT_CHARS": bad})


def test_a_typed_memory_with_merged_metadata_round_trips(memory: Memory) -> None:
    # A typed memory carries the union of its sources' metadata, which may exceed what one add may carry.
    now = utcnow()
    merged = {f"k{i}": "v" * 100 for i in range(1_500)}  # 1,500 keys and ~170 kB: over add's limits
    fact = MemoryItem(
        id="fact1",
        user_id="ana",
        kind=MemoryKind.FACT,
        text="The user's sister lives in Porto.",
        timestamp=now,
        created_at=now,
        updated_at=now,
        content_hash="1" * 64,
        metadata=merged,
    )
    memory._store.insert([fact], [fact.text], memory.embedder.embed([fact.text]))
    text = export_text(memory)
    other = Memory(":memory:", embedder=HashEmbedder(dim=32), config=memory.config)
    try:
        assert other.import_(io.StringIO(text), keep_user_ids=True) == 1
        assert other.get("fact1", user_id="ana").metadata == merged
    finally:
        other.close()
    with pytest.raises(ValidationError, match="keys"):
        memory.add("hello", user_id="ana", metadata=merged)


@pytest.mark.parametrize("name", ["bad\ud800.jsonl", "", "a\x00b"])
def test_import_and_export_paths_that_are_no_file_name_raise_validation_errors(
    memory: Memory, tmp_path: Path, name: str
) -> None:
    # A lone surrogate cannot be encoded for the file system: the open() itself would raise UnicodeEncodeError.
    memory.add("hello", user_id="ana")
    folder = tmp_path / "exports"
    folder.mkdir()
    target = str(folder / name) if name else name
    with pytest.raises(ValidationError):
        memory.export(target, user_id="ana")
    with pytest.raises(ValidationError):
        memory.import_(target, user_id="ana")
    assert not list(folder.iterdir())  # nothing half-written
    assert len(memory.list(user_id="ana")) == 1


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        # a list with one bad item: the item is named, not the union's branch that did not apply
        ({"kind": ["fact", 3]}, "invalid filters: kind[1]: Input should be 'message'"),
        ({"kind": "nope"}, "invalid filters: kind: Input should be 'message'"),
    ],
)
def test_a_filter_error_names_the_place_in_the_input(memory: Memory, filters: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValidationError) as caught:
        memory.search("x", user_id="u", filters=filters)
    message = str(caught.value)
    assert message.startswith(expected)
    assert "str-enum" not in message and "list[" not in message
