"""Hypothesis fuzz of every public ``Memory`` call and every CLI command with hostile values.

Only ``MemlaneError``s may escape a call, and a refused call leaves the store exactly as it was; a refused CLI
command exits 2 with one line on stderr and no traceback. The default run is bounded; ``-m slow`` runs more.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable, Iterator
from contextlib import chdir, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from memlane import Config, Memory
from memlane.cli import app
from memlane.embedding.fake import HashEmbedder
from memlane.errors import MemlaneError


def _nest(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def _nest_list(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


ISSUE_TIMES = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-05:00", "1e20", "not a time", ""]
SCALARS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([10**20, 10**30, -(2**63) - 1, 2**63, 0, -1, 1, 5]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e20, -1e20, float("nan"), float("inf"), 0.5, 1.5]),
    st.booleans(),
    st.none(),
)
STRINGS = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None), max_size=10),
    st.sampled_from(
        [
            "\udc80",
            "ok\ud800",
            "\x1b[31mred\x1b[0m",
            "\x00",
            "\x9b2J",
            "\u202eevil",
            "   ",
            "5",
            "0.5",
            "x" * 40_000,
            "n" * 1_000_001,
            *ISSUE_TIMES,
        ]
    ),
)
STRUCTURES = st.one_of(
    st.sampled_from([_nest(500), _nest(33), _nest(10), _nest_list(500), _nest(2, 10**30), {"k": float("nan")}]),
    st.sampled_from(
        [{1: "int key"}, {"k": object()}, {"k": b"bytes"}, {"k" * 300: 1}, {f"k{i}": i for i in range(1200)}]
    ),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    st.binary(max_size=10),
    st.just(object()),
    st.just(datetime(1, 1, 1, tzinfo=UTC)),
)
HOSTILE = st.one_of(SCALARS, STRINGS, STRUCTURES)


def snapshot(memory: Memory) -> tuple[Any, ...]:
    """Everything a refused call must leave untouched: every memory, its history, the jobs.

    Access counts that earlier searches gathered in memory are written first: they are part of the state before
    the call, and the next call writes them, refused or not.
    """
    memory._write_access()
    items = [it.model_dump() for it in memory._store.iter_items(None)]
    history = [[h.model_dump() for h in memory._store.history(it["user_id"], it["id"])] for it in items]
    jobs = [j.model_dump() for j in memory._store.jobs(None, None, 10_000)]
    return items, history, jobs, memory._store.embedder_identity()


@contextmanager
def seeded_memory() -> Iterator[tuple[Memory, dict[str, str]]]:
    with tempfile.TemporaryDirectory(prefix="memlane-fuzz-") as tmp:
        config = Config(data_dir=Path(tmp) / "home", embedder="hash", infer=False, background_worker=False)
        memory = Memory(Path(tmp) / "m.db", embedder=HashEmbedder(dim=32), config=config)
        try:
            first = memory.add(["I adopted a beagle called Biscuit", "My sister lives in Porto"], user_id="ana")
            other = memory.add("Bob likes chess", user_id="bob")
            buf = io.StringIO()
            memory.export(buf)
            export = Path(tmp) / "export.jsonl"
            export.write_text(buf.getvalue(), encoding="utf-8")
            ids = {"ana": first.items[0].id, "bob": other.items[0].id, "export": str(export), "tmp": tmp}
            yield memory, ids
        finally:
            memory.close()


Call = Callable[[Memory, dict[str, str], Any], object]


def _inside(v: str) -> str:
    """A hostile file name kept inside the current (temporary) directory: no separators, no parent steps."""
    name = v.replace("/", "_").replace("\x00", "_")
    return "." if name in ("", "..") else name


def _path(ids: dict[str, str], v: Any) -> Any:
    return str(Path(ids["tmp"]) / _inside(v)) if isinstance(v, str) else v


# Each entry puts the hostile value into one argument of one public call; the others are valid.
CALLS: dict[str, Call] = {
    "add.messages": lambda m, ids, v: m.add(v, user_id="ana"),
    "add.user_id": lambda m, ids, v: m.add("hello", user_id=v),
    "add.session_id": lambda m, ids, v: m.add("hello", user_id="ana", session_id=v),
    "add.agent_id": lambda m, ids, v: m.add("hello", user_id="ana", agent_id=v),
    "add.timestamp": lambda m, ids, v: m.add("hello", user_id="ana", timestamp=v),
    "add.metadata": lambda m, ids, v: m.add("hello", user_id="ana", metadata=v),
    "add.infer": lambda m, ids, v: m.add("hello", user_id="ana", infer=v),
    "add.async_mode": lambda m, ids, v: m.add("hello", user_id="ana", async_mode=v),
    "add.content": lambda m, ids, v: m.add({"content": v}, user_id="ana"),
    "add.role": lambda m, ids, v: m.add({"content": "hello", "role": v}, user_id="ana"),
    "add.name": lambda m, ids, v: m.add({"content": "hello", "name": v}, user_id="ana"),
    "add.msg_timestamp": lambda m, ids, v: m.add({"content": "hello", "timestamp": v}, user_id="ana"),
    "add.msg_metadata": lambda m, ids, v: m.add({"content": "hello", "metadata": v}, user_id="ana"),
    "add.batch_tail": lambda m, ids, v: m.add(["fine message", v], user_id="ana"),
    "search.query": lambda m, ids, v: m.search(v, user_id="ana"),
    "search.user_id": lambda m, ids, v: m.search("beagle", user_id=v),
    "search.top_k": lambda m, ids, v: m.search("beagle", user_id="ana", top_k=v),
    "search.filters": lambda m, ids, v: m.search("beagle", user_id="ana", filters=v),
    "search.since": lambda m, ids, v: m.search("beagle", user_id="ana", filters={"since": v}),
    "search.as_of": lambda m, ids, v: m.search("beagle", user_id="ana", filters={"as_of": v}),
    "search.meta": lambda m, ids, v: m.search("beagle", user_id="ana", filters={"metadata": {"k": v}}),
    "search.session": lambda m, ids, v: m.search("beagle", user_id="ana", filters={"session_id": v}),
    "search.kind": lambda m, ids, v: m.search("beagle", user_id="ana", filters={"kind": v}),
    "search.preset": lambda m, ids, v: m.search("beagle", user_id="ana", preset_name=v),
    "get.id": lambda m, ids, v: m.get(v, user_id="ana"),
    "get.user_id": lambda m, ids, v: m.get(ids["ana"], user_id=v),
    "list.limit": lambda m, ids, v: m.list(user_id="ana", limit=v),
    "list.offset": lambda m, ids, v: m.list(user_id="ana", offset=v),
    "list.filters": lambda m, ids, v: m.list(user_id="ana", filters=v),
    "list.until": lambda m, ids, v: m.list(user_id="ana", filters={"until": v}),
    "list.speaker": lambda m, ids, v: m.list(user_id="ana", filters={"speaker": v}),
    "history.id": lambda m, ids, v: m.history(v, user_id="ana"),
    "history.user_id": lambda m, ids, v: m.history(ids["ana"], user_id=v),
    "update.id": lambda m, ids, v: m.update(v, user_id="ana", text="new text"),
    "update.text": lambda m, ids, v: m.update(ids["ana"], user_id="ana", text=v),
    "update.metadata": lambda m, ids, v: m.update(ids["ana"], user_id="ana", metadata=v),
    "update.importance": lambda m, ids, v: m.update(ids["ana"], user_id="ana", importance=v),
    "update.foreign": lambda m, ids, v: m.update(ids["bob"], user_id="ana", importance=v),
    "delete.id": lambda m, ids, v: m.delete(v, user_id="ana"),
    "delete.user_id": lambda m, ids, v: m.delete(ids["ana"], user_id=v),
    "delete_all.user_id": lambda m, ids, v: m.delete_all(user_id=v),
    "feedback.hit": lambda m, ids, v: m.feedback(v, useful=True, query="beagle", user_id="ana"),
    "feedback.useful": lambda m, ids, v: m.feedback(ids["ana"], useful=v, query="beagle", user_id="ana"),
    "feedback.query": lambda m, ids, v: m.feedback(ids["ana"], useful=True, query=v, user_id="ana"),
    "export.dest": lambda m, ids, v: m.export(_path(ids, v)),
    "export.user_id": lambda m, ids, v: m.export(io.StringIO(), user_id=v),
    "import.source": lambda m, ids, v: m.import_(_path(ids, v), user_id="carol"),
    "import.text": lambda m, ids, v: m.import_(io.StringIO(v if isinstance(v, str) else repr(v)), user_id="carol"),
    "import.user_id": lambda m, ids, v: m.import_(ids["export"], user_id=v),
    "import.keep": lambda m, ids, v: m.import_(ids["export"], keep_user_ids=v),
    "archive.limit": lambda m, ids, v: m.archive(user_id="ana", limit=v),
    "archive.offset": lambda m, ids, v: m.archive(user_id="ana", offset=v),
    "restore.id": lambda m, ids, v: m.restore(v, user_id="ana"),
    "forget.hard": lambda m, ids, v: m.forget(user_id=v),
    "tune.name": lambda m, ids, v: m.tune(name=v),
    "tune.base": lambda m, ids, v: m.tune(name="mine", base=v),
    "tune.k": lambda m, ids, v: m.tune(name="mine", k=v),
    "tune.test_share": lambda m, ids, v: m.tune(name="mine", test_share=v),
    "tune.queries": lambda m, ids, v: m.tune(v, name="mine"),
    "job.id": lambda m, ids, v: m.job(v, user_id="ana"),
    "jobs.state": lambda m, ids, v: m.jobs(user_id="ana", state=v),
    "jobs.limit": lambda m, ids, v: m.jobs(user_id="ana", limit=v),
    "wait.timeout": lambda m, ids, v: m.wait("nope", user_id="ana", timeout=v),
    "flush.timeout": lambda m, ids, v: m.flush(timeout=v),
    "retry_jobs.user_id": lambda m, ids, v: m.retry_jobs(user_id=v),
    "stats.user_id": lambda m, ids, v: m.stats(user_id=v),
    "reindex.batch_size": lambda m, ids, v: m.reindex(batch_size=v),
    "reindex.on_progress": lambda m, ids, v: m.reindex(on_progress=v),
    "import.on_progress": lambda m, ids, v: m.import_(ids["export"], user_id="ana", on_progress=v),
    "open.path": lambda m, ids, v: _open(m, _path(ids, v)),
}


def _open(memory: Memory, path: Any) -> None:
    Memory(path, embedder=memory.embedder, config=memory.config).close()


def check_call(memory: Memory, ids: dict[str, str], name: str, value: Any) -> None:
    before = snapshot(memory)
    try:
        CALLS[name](memory, ids, value)
    except MemlaneError:
        assert snapshot(memory) == before, f"{name} was refused but changed the store"
    except Exception as exc:  # pragma: no cover - the failure being looked for
        raise AssertionError(f"{name}({value!r:.80}) raised {type(exc).__name__}: {exc}") from exc


def _fuzz_api(examples: int) -> Callable[[], None]:
    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        with seeded_memory() as (memory, ids):
            for _ in range(8):
                name = data.draw(st.sampled_from(sorted(CALLS)), label="call")
                check_call(memory, ids, name, data.draw(HOSTILE, label="value"))

    return run


def test_every_call_with_hostile_values_raises_only_memlane_errors() -> None:
    _fuzz_api(40)()


@pytest.mark.slow
def test_every_call_with_hostile_values_raises_only_memlane_errors_long() -> None:
    _fuzz_api(1500)()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_call_refuses_the_issue_values(name: str) -> None:
    """Every call slot with each value the bug report names, deterministically (not left to the fuzzer)."""
    values = [10**20, 10**30, 1e20, float("nan"), "\udc80", "5", "0.5", _nest(500), "n" * 1_000_001, *ISSUE_TIMES]
    with seeded_memory() as (memory, ids):
        for value in values:
            check_call(memory, ids, name, value)


# -- the command line --------------------------------------------------------------------------------------
runner = CliRunner()

CLI_TEXT = st.one_of(
    st.text(max_size=20).filter(lambda s: "\x00" not in s),
    st.sampled_from(
        [
            "\x1b[31mred",
            "\u202eevil",
            "-1",
            "100000000000000000000",
            "1e20",
            "nan",
            "0001-01-01T00:00:00+01:00",
            "9999-12-31T23:59:59-05:00",
            "x" * 40_000,
            "--",
            "-",
            "/proc/nope/x.db",
            "/",
        ]
    ),
)
COMMANDS: list[Callable[[str], list[str]]] = [
    lambda v: ["add", "--user", "ana", v],
    lambda v: ["add", "--user", v, "hello"],
    lambda v: ["add", "--user", "ana", "hello", "--timestamp", v],
    lambda v: ["add", "--user", "ana", "hello", "--role", v],
    lambda v: ["add", "--user", "ana", "hello", "--name", v],
    lambda v: ["add", "--user", "ana", "hello", "--session", v],
    lambda v: ["add", "--user", "ana", "--file", v],
    lambda v: ["search", v, "--user", "ana"],
    lambda v: ["search", "beagle", "--user", "ana", "--top-k", v],
    lambda v: ["search", "beagle", "--user", "ana", "--preset", v],
    lambda v: ["get", v, "--user", "ana"],
    lambda v: ["list", "--user", "ana", "--limit", v],
    lambda v: ["list", "--user", "ana", "--offset", v],
    lambda v: ["list", "--user", v],
    lambda v: ["history", v, "--user", "ana"],
    lambda v: ["delete", v, "--user", "ana"],
    lambda v: ["jobs", "--user", "ana", "--state", v],
    lambda v: ["archive", "--user", "ana", "--limit", v],
    lambda v: ["archive", "--user", "ana", "--restore", v],
    lambda v: ["import", v, "--user", "carol"],
    lambda v: ["import", "-", "--user", v],
    lambda v: ["export", v if v in ("-", "/", "/proc/nope/x.db") else _inside(v)],
    lambda v: ["stats", "--user", v],
    lambda v: ["stats", "--db", v if v in ("/", "/proc/nope/x.db") else _inside(v)],
    lambda v: ["tune", "--name", v],
    lambda v: [v],
]


def check_cli(env: dict[str, str], args: list[str]) -> None:
    result = runner.invoke(app, args, env=env, input="")
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{args!r:.200} raised {type(result.exception).__name__}: {result.exception}"
    )
    assert result.exit_code in (0, 2), (args, result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.stderr)
        assert "\x1b" not in result.stderr


def _fuzz_cli(examples: int) -> Callable[[], None]:
    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(command=st.integers(min_value=0, max_value=len(COMMANDS) - 1), value=CLI_TEXT)
    def run(command: int, value: str) -> None:
        with (
            tempfile.TemporaryDirectory(prefix="memlane-cli-fuzz-") as tmp,
            chdir(tmp),  # every relative path a command writes stays in here
        ):
            env = {"MEMLANE_HOME": f"{tmp}/home", "MEMLANE_EMBEDDER": "hash", "MEMLANE_DB": f"{tmp}/m.db"}
            check_cli(env, COMMANDS[command](value))

    return run


def test_every_command_with_hostile_values_exits_0_or_2_with_one_line() -> None:
    _fuzz_cli(40)()


@pytest.mark.slow
def test_every_command_with_hostile_values_exits_0_or_2_with_one_line_long() -> None:
    _fuzz_cli(1000)()
