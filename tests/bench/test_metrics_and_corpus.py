"""Pure parts of the benchmark harness: bootstrap statistics, token counts, corpus variation, the network guard."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memlane.bench.common import forget_queries
from memlane.bench.corpus import Seeds, corpus, queries
from memlane.bench.locomo import QuestionRow, group_scores
from memlane.bench.metrics import bootstrap_mean, count_tokens, paired_bootstrap_test, percentile
from memlane.bench.peers import point_embedder
from memlane.bench.scale import ScalePlan, parse_max_sizes, user_blocks
from memlane.embedding.cache import CachedQueryEmbedder
from memlane.embedding.fake import HashEmbedder
from memlane.errors import ConfigError


def test_bootstrap_mean_brackets_the_mean() -> None:
    values = [0.0, 1.0] * 50
    mean, low, high = bootstrap_mean(values)
    assert mean == 0.5
    assert low < 0.5 < high
    assert bootstrap_mean([]) == (0.0, 0.0, 0.0)
    assert bootstrap_mean([0.25]) == (0.25, 0.25, 0.25)


def test_paired_test_finds_a_real_difference_and_not_a_null_one() -> None:
    a = [0.0] * 60 + [1.0] * 40
    better = [1.0] * 100
    delta, low, high, p = paired_bootstrap_test(a, better)
    assert delta == pytest.approx(0.6)
    assert low > 0 and high <= 1.0
    assert p < 0.01
    _, _, _, p_same = paired_bootstrap_test(a, list(a))
    assert p_same == 1.0
    with pytest.raises(ValueError):
        paired_bootstrap_test([1.0], [1.0, 0.0])


def test_count_tokens_and_percentile() -> None:
    assert count_tokens("I adopted Pepper, a border-collie!") == 9
    assert count_tokens("") == 0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([5.0], 0.99) == 5.0
    assert percentile([], 0.5) == 0.0


def test_group_scores_counts_tokens_of_the_top_k() -> None:
    row = QuestionRow(qid="q", category=4, evidence=["D1:2"], retrieved=["D1:1", "D1:2"], tokens=[3, 4], latency_ms=1)
    scores = group_scores("single-hop", [row], resamples=10)
    assert scores.recall[1].mean == 0.0
    assert scores.recall[5].mean == 1.0
    assert scores.mrr.mean == 0.5
    assert scores.tokens[1] == 3 and scores.tokens[10] == 7


def test_corpus_is_distinct_deterministic_and_prefix_stable() -> None:
    seeds = Seeds(
        texts=["Caroline went to a support group.", "Melanie painted a lake at sunrise. It was calm.", "Hi there!"],
        names=["Caroline", "Melanie"],
        questions=["What did Caroline paint?", "When did Melanie go?"],
    )
    big = list(corpus(seeds, 200))
    assert len(big) == len(set(big)) == 200
    assert big[:3] == seeds.texts
    assert list(corpus(seeds, 50)) == big[:50]
    assert any("Caroline" not in t and "Melanie" not in t and "support group" in t for t in big[3:])
    assert len(queries(seeds, 5)) == 5


def test_scale_plan_and_user_blocks() -> None:
    plan = ScalePlan.build(sizes=[1000, 100_000], embedders=["minilm", "static"], users=[1, 1000],
                           max_sizes=["minilm=1000"])  # fmt: skip
    assert ("minilm", 100_000, 1) not in plan.points()
    assert ("static", 100_000, 1000) in plan.points()
    assert parse_max_sizes(["a=5"]) == {"a": 5}
    with pytest.raises(ConfigError):
        parse_max_sizes(["a"])
    blocks = user_blocks(10, 3)
    assert [b[2] - b[1] for b in blocks] == [4, 3, 3]
    assert blocks[-1][2] == 10


def test_network_guard_refuses_remote_hosts_but_not_loopback() -> None:
    code = (
        "import socket\n"
        "from memlane.bench.netguard import attempts, block_network\n"
        "block_network()\n"
        "try:\n"
        "    socket.create_connection(('example.org', 80), timeout=1)\n"
        "except OSError:\n"
        "    pass\n"
        "s = socket.socket()\n"
        "print(s.connect_ex(('127.0.0.1', 9)) != 0, attempts())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "True ['lookup example.org']"


def test_importing_the_bench_package_needs_no_extra() -> None:
    code = (
        "import sys\n"
        "import memlane.bench.report, memlane.bench.peers, memlane.bench.scale, memlane.cli.bench\n"
        "print(sorted(m for m in ('bm25s', 'chromadb', 'lancedb', 'mem0', 'matplotlib', 'psutil') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                         cwd=Path(__file__).parent)  # fmt: skip
    assert out.stdout.strip() == "[]"


def test_a_speed_point_names_the_embedder_each_system_really_used() -> None:
    assert point_embedder("lancedb", "static") == "static"  # LanceDB and Chroma embed with memlane's embedder
    assert point_embedder("chroma", None) == "minilm"
    assert point_embedder("mem0", "static") == "minilm (its own)"  # mem0 always runs its own model
    assert point_embedder("bm25s", "static") == "none"


def test_a_timed_pass_starts_without_cached_query_vectors() -> None:
    cached = CachedQueryEmbedder(HashEmbedder())
    cached.embed_query("where does Kim live?")
    forget_queries(cached)
    cached.embed_query("where does Kim live?")
    assert (cached.hits, cached.misses) == (0, 2)
    forget_queries(HashEmbedder())  # an embedder without a cache: nothing to do, no error


def test_a_scale_row_names_its_backends_and_nothing_of_the_url() -> None:
    from memlane.bench.scale import store_label

    assert store_label("postgresql://bench:secret@db.example:5432/m?sslmode=require") == "postgresql"
    assert store_label("sqlite:////srv/m.db?vectors=qdrant+local") == "sqlite + qdrant+local"
    assert store_label("sqlite:///m.db?collection=c&vectors=qdrants%3A%2F%2Fkey%40q.example") == "sqlite + qdrants"
    assert store_label("sqlite:///m.db") == "sqlite"
