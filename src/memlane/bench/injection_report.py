"""``memlane bench injection --loso``: the leave-one-source-out table, the embeddings it needs (cached on disk by
text), and writing the model fitted on every source as the one that ships.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memlane.bench.injection_data import Sample, load_sources
from memlane.bench.injection_loso import F32, FoldResult, Model, Trainer, loso
from memlane.bench.metrics import percentile
from memlane.embedding import make_embedder
from memlane.embedding._common import default_cache_dir
from memlane.security.classifier import ClassifierModel
from memlane.security.detect import CombinedDetector
from memlane.security.head import DetectorHead

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "security" / "data"


def cached_embed(spec: str | None, cache_dir: Path | None = None) -> tuple[str, Callable[[Sequence[str]], F32]]:
    """The embedder ``spec`` names (``None``: the default MiniLM), as a function whose vectors are kept in
    ``cache_dir`` (default ``~/.cache/memlane/bench``) by the SHA-256 of each text; and its identity.
    """
    embedder = make_embedder(spec)
    identity = embedder.identity
    folder = cache_dir or default_cache_dir().parent / "bench"
    path = folder / f"injection-vectors-{re.sub(r'[^A-Za-z0-9.=_-]+', '_', identity)}.npz"
    known: dict[str, F32] = {}
    if path.exists():
        with np.load(path, allow_pickle=False) as data:
            known = dict(zip(data["keys"].tolist(), data["vecs"].astype(np.float32), strict=True))

    def embed(texts: Sequence[str]) -> F32:
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in known]
        if missing:
            for i, vec in zip(missing, embedder.embed([texts[i] for i in missing]), strict=True):
                known[keys[i]] = np.asarray(vec, dtype=np.float32)
            folder.mkdir(parents=True, exist_ok=True)
            np.savez(path, keys=np.array(list(known)), vecs=np.vstack(list(known.values())))
        return np.vstack([known[k] for k in keys])

    return identity, embed


def ship(
    model: Model, identity: str, out_dir: Path | None = SHIPPED_DIR, *, enable: bool = True
) -> tuple[ClassifierModel, DetectorHead]:
    """The n-gram classifier and the head (with both stackers and thresholds) fitted on every source, written to
    ``out_dir`` unless it is ``None``; the head is enabled for the embedder ``identity`` only with ``enable``
    (otherwise it ships for the record, and every embedder takes the path without it).
    """
    info = (
        "logistic regression over hashed n-grams, stacked with a head over the sentence embedding; fitted on "
        "deepset, jailbreak-classification, NotInject and BIPIA train files (see NOTICE.md); stacker and threshold "
        "chosen on leave-one-source-out scores inside them"
    )
    ngram = ClassifierModel(
        model.fitted.ngram.weights, model.fitted.ngram.bias, model.plain_threshold, model.fitted.ngram.bits, info
    )
    if model.fitted.head is None:
        raise ValueError("the model was fitted without an embedding head")
    head = DetectorHead(
        model.fitted.head,
        model.stacker,
        model.threshold,
        model.plain_stacker,
        model.plain_threshold,
        (identity,) if enable else (),
    )
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        ngram.save(out_dir / "injection_model.npz")
        head.save(out_dir / "injection_head.npz")
    return ngram, head


@dataclass(frozen=True)
class Cost:
    """Milliseconds per text at ingest (one text per call, its vector given): mean and p95, per kind of text."""

    kind: str
    n: int
    mean: float
    p95: float


def measure_cost(
    ngram: ClassifierModel, head: DetectorHead, by_source: Mapping[str, list[Sample]], trainer: Trainer
) -> list[Cost]:
    """Time the shipped combination on conversation turns and on documents, one text per call, as ``Guard`` runs
    it (the embedding itself is not timed: the write computes it for storage anyway).
    """
    detector = CombinedDetector(ngram, head=head)
    kinds = {
        "LoCoMo turns": by_source.get("locomo", [])[:2000],
        "short prompts (deepset, NotInject)": by_source["deepset"] + by_source["notinject"],
        "documents (BIPIA e-mail, code, 1 table in 9)": by_source["bipia-email"]
        + by_source["bipia-code"]
        + by_source["bipia-table"][::9],
    }
    out = []
    for kind, samples in kinds.items():
        if not samples:
            continue
        vectors = trainer.vectors(samples)
        detector.scan_embedded([samples[0].text], vectors[:1])  # warm
        ms = []
        for i, s in enumerate(samples):
            start = time.perf_counter()
            detector.scan_embedded([s.text], vectors[i : i + 1])
            ms.append((time.perf_counter() - start) * 1000)
        out.append(Cost(kind, len(ms), float(np.mean(ms)), percentile(ms, 0.95)))
    return out


def _fmt(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def markdown(rows: Sequence[FoldResult], command: str, identity: str, load: str, seconds: float) -> str:
    """The leave-one-source-out table."""
    lines = [
        f"Leave-one-source-out, `{command}`; embedder `{identity}`; load average {load}; {seconds:.0f} s.",
        "Each source is scored by a detector fitted on the others, at a threshold chosen on them (inner folds);",
        "LoCoMo turns by the detector fitted on all six (never fitted on). Ceiling: the best recall of any threshold",
        "keeping this source's FPR within 0.03, read off the held-out source itself (a bound, not an estimate).",
        "",
        "| held-out source | path | attacks | recall | benign | FPR | AUC | threshold | ceiling |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r.source} | {r.path} | {r.attacks} | {_fmt(r.recall)} | {r.benign} | {_fmt(r.fpr)} | "
            f"{_fmt(r.auc)} | {r.threshold:.3f} | {_fmt(r.ceiling)} |"
        )
    return "\n".join(lines)


def as_json(rows: Sequence[FoldResult], identity: str) -> dict[str, Any]:
    """The table as JSON-ready data (NaN as ``None``)."""

    def num(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {
        "embedder": identity,
        "rows": [
            {
                "source": r.source,
                "path": r.path,
                "attacks": r.attacks,
                "caught": r.caught,
                "recall": num(r.recall),
                "benign": r.benign,
                "flagged": r.flagged,
                "fpr": num(r.fpr),
                "auc": num(r.auc),
                "threshold": r.threshold,
                "ceiling": num(r.ceiling),
            }
            for r in rows
        ],
    }


def run_loso(
    data: Path,
    locomo: Path | None,
    *,
    write: bool,
    embedder: str | None = None,
    progress: Callable[[str], object] = lambda _: None,
) -> tuple[list[FoldResult], list[Cost], str, float]:
    """The leave-one-source-out rows and the cost per text of the model fitted on every source; with ``write``
    that model replaces the shipped one.
    """
    start = time.perf_counter()
    identity, embed = cached_embed(embedder)
    by_source = load_sources(data, locomo)
    trainer = Trainer(embed)
    rows, final = loso(trainer, by_source, progress)
    seconds = time.perf_counter() - start
    ngram, head = ship(final, identity, SHIPPED_DIR if write else None, enable=head_helps(rows))
    return rows, measure_cost(ngram, head, by_source, trainer), identity, seconds


def head_helps(rows: Sequence[FoldResult]) -> bool:
    """Whether the embedding head earns its place: its path ranks the held-out source better (higher AUC) than
    the n-gram path for most held-out sources that have both labels.
    """
    auc = {(r.source, r.path): r.auc for r in rows if not math.isnan(r.auc)}
    sources = {s for s, p in auc if p == "embedding" and (s, "n-gram") in auc}
    better = sum(auc[(s, "embedding")] > auc[(s, "n-gram")] for s in sources)
    return bool(sources) and better > len(sources) / 2


def loso_command(data: Path, locomo: Path | None, write: bool, json_out: Path | None) -> str:
    """What ``memlane bench injection --loso [--train]`` prints (and writes as JSON to ``json_out``)."""
    import json
    import os
    import sys

    rows, costs, identity, seconds = run_loso(
        data, locomo, write=write, progress=lambda line: sys.stderr.write(line + "\n")
    )
    load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    command = "memlane bench injection --loso" + (" --train" if write else "")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        body = as_json(rows, identity)
        body["cost_ms"] = [{"kind": c.kind, "n": c.n, "mean": c.mean, "p95": c.p95} for c in costs]
        json_out.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    lines = [
        markdown(rows, command, identity, load, seconds),
        "",
        "| cost per text (vector given) | n | mean ms | p95 ms |",
    ]
    lines.append("| --- | ---: | ---: | ---: |")
    lines += [f"| {c.kind} | {c.n} | {c.mean:.3f} | {c.p95:.3f} |" for c in costs]
    return "\n".join(lines)
