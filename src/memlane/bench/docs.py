"""Documentation retrieval on any BEIR folder: every preset, documents added in batches and one per call.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``; any other field is ignored, since fields such
as docs-qa's ``distractor`` give the answer away), ``queries.jsonl`` (``_id``, ``text``) and ``qrels.tsv``
(``query-id``, ``corpus-id``, ``score``; a header line, rows of score 0 or less ignored). Each document becomes one
memory whose text is its title and text, added through ``Memory.add`` as a new user would add documents: no
session, the role ``user``, ``batch`` documents per call. Each query goes through ``Memory.search`` with every
preset; the top 10 distinct documents are scored (MRR@10, recall@10, nDCG@10, with bootstrap intervals, and a
paired bootstrap test of each preset against the default), reusing the labelled sets' report.
"""

from __future__ import annotations

import csv
import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from memlane.bench.common import NullTracker, Tracker, forget_queries, machine
from memlane.bench.embed_cache import bench_embedder, warm_queries
from memlane.bench.labelled import LABEL_KEY, SetConfigResult, SetReport, compare_rows, render_set_report
from memlane.bench.locomo import QuestionRow, group_scores
from memlane.bench.metrics import count_tokens, percentile
from memlane.config import DEFAULT_PRESET, PRESETS, Config, preset
from memlane.engine import Memory
from memlane.errors import ValidationError
from memlane.models import Hit, Message

#: The one user scope every document is stored in and every query searches.
SCOPE = "docs"
#: Documents scored per query (every metric is @10), and hits fetched to find them.
TOP_IDS = 10
TOP_K = 30
#: The ingest modes run by default: 200 documents per ``add`` call, and one per call.
BATCHES: tuple[int, ...] = (200, 1)


@dataclass(frozen=True)
class BeirSet:
    """A BEIR folder read into memory: documents (id -> title and text), queries (id -> text) and relevance."""

    name: str
    path: Path
    documents: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, tuple[str, ...]]

    def scored(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """(query id, text, relevant document ids) of every query that has a relevant document, in id order."""
        return [(q, self.queries[q], self.qrels[q]) for q in sorted(self.queries) if self.qrels.get(q)]


def _jsonl(path: Path) -> list[dict[str, object]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValidationError(f"{path}: line {n} is not a JSON object")
            rows.append(row)
    return rows


def document_text(title: str, text: str) -> str:
    """A document as one memory: its title, a blank line, its text (the title alone when the text is empty)."""
    title, text = title.strip(), text.strip()
    return f"{title}\n\n{text}" if title and text else title or text


def load_beir(path: Path, name: str | None = None) -> BeirSet:
    """Read a BEIR folder; fail with ``ValidationError`` naming the file and the problem."""
    if not path.is_dir():
        raise ValidationError(f"{path} is not a folder (expected corpus.jsonl, queries.jsonl and qrels.tsv)")
    for file in ("corpus.jsonl", "queries.jsonl", "qrels.tsv"):
        if not (path / file).is_file():
            raise ValidationError(f"{path} has no {file}")
    try:
        documents: dict[str, str] = {}
        for row in _jsonl(path / "corpus.jsonl"):
            doc_id = str(row["_id"])
            if doc_id in documents:
                raise ValidationError(f"{path}/corpus.jsonl: document id {doc_id!r} appears twice")
            body = document_text(str(row.get("title") or ""), str(row.get("text") or ""))
            if not body:
                raise ValidationError(f"{path}/corpus.jsonl: document {doc_id!r} has no title and no text")
            documents[doc_id] = body
        queries = {str(row["_id"]): str(row["text"]) for row in _jsonl(path / "queries.jsonl")}
        relevant: dict[str, list[str]] = {}
        with (path / "qrels.tsv").open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t")
            for n, fields in enumerate(reader, start=1):
                if not fields or (n == 1 and not fields[-1].strip().lstrip("-").isdigit()):
                    continue  # blank line, or the header
                if len(fields) < 3:
                    raise ValidationError(f"{path}/qrels.tsv: line {n} has {len(fields)} fields, expected 3")
                qid, doc_id, score = fields[0], fields[1], int(fields[-1])
                if score <= 0:
                    continue
                if doc_id not in documents:
                    raise ValidationError(f"{path}/qrels.tsv: line {n} names document {doc_id!r}, not in the corpus")
                if qid not in queries:
                    raise ValidationError(f"{path}/qrels.tsv: line {n} names query {qid!r}, not in queries.jsonl")
                relevant.setdefault(qid, []).append(doc_id)
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"malformed BEIR folder {path}: {exc!r}") from None
    if not any(relevant.values()):
        raise ValidationError(f"{path}: no query has a relevant document")
    return BeirSet(
        name=name or path.name,
        path=path,
        documents=documents,
        queries=queries,
        qrels={q: tuple(dict.fromkeys(d)) for q, d in relevant.items()},
    )


class DocsReport(BaseModel):
    """A ``bench docs`` run: one labelled-set report per (set, ingest mode)."""

    kind: Literal["docs"] = "docs"
    command: str = ""
    runs: list[SetReport] = Field(default_factory=list)


def ingest(memory: Memory, beir: BeirSet, batch: int, tracker: Tracker) -> None:
    """Add every document of ``beir`` to the one scope, ``batch`` documents per ``add`` call, no session."""
    items = list(beir.documents.items())
    for start in range(0, len(items), batch):
        chunk = items[start : start + batch]
        memory.add(
            [Message(role="user", content=text, metadata={LABEL_KEY: doc_id}) for doc_id, text in chunk],
            user_id=SCOPE,
        )
        tracker.advance(len(chunk))


def _documents_of(hits: Sequence[Hit]) -> tuple[list[str], list[str]]:
    """The document ids of the hits, best first, each once (a typed memory carries no id and is skipped)."""
    ids: list[str] = []
    texts: list[str] = []
    for h in hits:
        label = h.memory.metadata.get(LABEL_KEY)
        if label is not None and str(label) not in ids:
            ids.append(str(label))
            texts.append(h.memory.text)
    return ids[:TOP_IDS], texts[:TOP_IDS]


def answer(memory: Memory, beir: BeirSet, names: Sequence[str], tracker: Tracker) -> list[SetConfigResult]:
    """Every scored query of ``beir`` answered by every preset of ``names``."""
    scored = beir.scored()
    warm_queries(memory.embedder, (text for _, text, _ in scored))
    results = []
    for name in names:
        forget_queries(memory.embedder)
        rows: list[QuestionRow] = []
        tracker.phase(f"{beir.name}: queries ({name})", len(scored))
        for qid, text, relevant in scored:
            t0 = time.perf_counter()
            hits = memory.search(text, user_id=SCOPE, top_k=TOP_K, preset_name=name)
            latency = (time.perf_counter() - t0) * 1000
            ids, texts = _documents_of(hits)
            rows.append(
                QuestionRow(
                    qid=qid,
                    category=0,
                    evidence=list(relevant),
                    retrieved=ids,
                    tokens=[count_tokens(t) for t in texts],
                    latency_ms=latency,
                )
            )
            tracker.advance()
        lat = [r.latency_ms for r in rows]
        results.append(
            SetConfigResult(
                name=name,
                description=preset(name).description,
                is_default=name == DEFAULT_PRESET,
                groups=[group_scores("all", rows)],
                search_p50_ms=percentile(lat, 0.5),
                search_p95_ms=percentile(lat, 0.95),
                questions=rows,
            )
        )
    return results


def run_beir(
    beir: BeirSet,
    *,
    batch: int,
    presets: Sequence[str] | None = None,
    embedder: str | None = None,
    tracker: Tracker | None = None,
    db_path: Path | None = None,
) -> SetReport:
    """Ingest ``beir`` (``batch`` documents per call) into a new store, then answer its queries with every preset.

    ``db_path``: keep the store there and, when it exists already, search it as it is instead of ingesting again
    (for repeated runs of read-path changes only: the file must have been written by the same ingest).
    """
    if batch < 1:
        raise ValidationError(f"batch must be at least 1, got {batch}")
    track = tracker or NullTracker()
    names = list(dict.fromkeys(preset(n).name for n in [*(presets or list(PRESETS)), DEFAULT_PRESET]))
    config = Config.from_env()
    with tempfile.TemporaryDirectory(prefix="memlane-bench-docs-") as tmp:
        path = db_path or Path(tmp) / f"{beir.name}.db"
        fresh = not path.exists()
        model = bench_embedder(embedder or config.embedder, config.model_cache)  # MEMLANE_BENCH_EMBED_CACHE
        with Memory(path, embedder=model, config=config) as memory:
            memory.embedder.embed(["warm up the model before timing"])
            memory.embedder.embed_query("warm up")
            ingest_s = 0.0
            if fresh:
                track.phase(f"{beir.name}: adding {batch} per call", len(beir.documents))
                start = time.perf_counter()
                ingest(memory, beir, batch, track)
                ingest_s = time.perf_counter() - start
            results = answer(memory, beir, names, track)
            identity = memory.embedder.identity
    default = next(r for r in results if r.is_default)
    return SetReport(
        set_name=f"{beir.name} (batch {batch})",
        description=f"BEIR folder {beir.path}: {len(beir.documents)} documents added {batch} per call, no session",
        source=str(beir.path),
        split="all",
        scopes=[SCOPE],
        memories=len(beir.documents),
        queries=len(beir.queries),
        no_evidence=[q for q in sorted(beir.queries) if not beir.qrels.get(q)],
        embedder=identity,
        machine=machine(),
        ingest_items_per_s=len(beir.documents) / ingest_s if ingest_s > 0 else 0.0,
        results=results,
        comparisons=[c for r in results if r is not default for c in compare_rows(default, r)],
        notes=[f"top {TOP_IDS} distinct documents scored: MRR is MRR@{TOP_IDS}"],
    )


def run_docs(
    folders: Sequence[Path],
    *,
    batches: Sequence[int] = BATCHES,
    presets: Sequence[str] | None = None,
    embedder: str | None = None,
    tracker: Tracker | None = None,
    stores: Path | None = None,
) -> DocsReport:
    """Every folder in every ingest mode (a fresh store each), every preset.

    ``stores``: a folder where each (set, mode) store is kept as ``NAME-batchB.db``; one that exists already is
    searched as it is (written by the same ingest: for read-path changes only).
    """
    sets = [load_beir(f) for f in folders]
    if stores is not None:
        stores.mkdir(parents=True, exist_ok=True)
    return DocsReport(
        runs=[
            run_beir(
                s,
                batch=b,
                presets=presets,
                embedder=embedder,
                tracker=tracker,
                db_path=None if stores is None else stores / f"{s.name}-batch{b}.db",
            )
            for s in sets
            for b in batches
        ]
    )


def summary_table(report: DocsReport) -> list[str]:
    """One row per (set, ingest mode, preset): MRR@10, R@10 and nDCG@10 with their 95% intervals."""
    lines = [
        "| set | added | preset | n | MRR@10 (95% CI) | R@10 (95% CI) | nDCG@10 (95% CI) |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in report.runs:
        name, _, mode = run.set_name.partition(" (")
        for res in run.results:
            g = res.group("all")
            r10 = g.recall[10]
            label = f"{res.name} (default)" if res.is_default else res.name
            lines.append(
                f"| {name} | {mode.rstrip(')')} | {label} | {g.questions} | {g.mrr.mean:.3f} "
                f"({g.mrr.low:.3f}-{g.mrr.high:.3f}) | {r10.mean:.3f} ({r10.low:.3f}-{r10.high:.3f}) | "
                f"{g.ndcg10.mean:.3f} ({g.ndcg10.low:.3f}-{g.ndcg10.high:.3f}) |"
            )
    return lines


def render_docs_report(report: DocsReport) -> str:
    """The summary table, then each run's full report (paired tests against the default, latency)."""
    parts = ["\n".join(summary_table(report))]
    parts += [render_set_report(run) for run in report.runs]
    return "\n\n".join(parts)
