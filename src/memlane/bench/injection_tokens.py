"""An experiment, not what ships: does a head over MiniLM's pooled *token* states carry across sources better than
the n-gram path? ``python -m memlane.bench.injection_tokens --data DIR --locomo FILE [--json OUT]``.

Each variant (``VARIANTS``) is a linear head over some of ``token_pools.BLOCKS``, standardised on its training rows
(``PoolTrainer``) and fitted as the harness fits its embedding head (logistic regression, ``injection_loso.HEAD_C``,
every (source, label) cell weighing the same). It goes through the harness's own
leave-one-source-out protocol (``injection_loso``): the held-out source is never fitted on and never sets a
threshold; inside the remaining sources the inner folds fit the stacker and choose the threshold. Three paths are
scored per held-out source:

- ``n-gram``: today's path (the n-gram classifier stacked with its window count, noisy-or with the rules);
- ``head``: the token-state head alone, its probability against a threshold chosen the same way on its inner
  out-of-fold scores (no rules, no n-grams);
- ``stacked``: the harness's embedding path with the token-state head in place of the sentence-vector head.

LoCoMo turns are scored by the model fitted on all six sources (never fitted on). The head's features, its C and
the blocks of each variant are fixed here, before any run, not searched.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memlane.bench.injection_data import SOURCES, Sample, load_sources
from memlane.bench.injection_loso import (
    F32,
    F64,
    HEAD_C,
    FoldResult,
    Model,
    Scores,
    Trainer,
    _result,
    choose_threshold,
    combined,
    fit_stacker,
    inner_scores,
)
from memlane.bench.token_pools import BLOCKS, PoolCache
from memlane.security.head import EmbeddingHead


@dataclass(frozen=True)
class Variant:
    """A head's input: the pools it reads, and whether training keeps attacks past what the first pass reads."""

    name: str
    blocks: tuple[str, ...]
    reads_all: bool  # every pass read: no attack is out of sight, so none is dropped from the head's training


VARIANTS: tuple[Variant, ...] = (
    Variant("mean-first", ("mean_first",), False),  # control: the sentence vector the write stores
    Variant("mean+max-first", ("mean_first", "max_first"), False),  # what the write's own pass gives, for free
    Variant("mean+max-all", ("mean_all", "max_all"), True),  # every 254-piece pass of a long text
    Variant("max-all", ("max_all",), True),
)


def features(pools: F32, blocks: Sequence[str]) -> F32:
    """The chosen blocks of ``pools`` (``(n, 4, 384)``), side by side, as the model gives them."""
    return np.concatenate([pools[:, BLOCKS.index(name)] for name in blocks], axis=1).astype(np.float32)


class PoolTrainer(Trainer):
    """The harness's trainer with a head over raw pooled states: each feature standardised on the head's own
    training rows and divided by the square root of their number, so a row has unit expected length, as the
    sentence vectors the harness's head reads have, and the same C means the same. (Max-pooled states scaled to unit
    length lie within cosine ~0.85 of each other, one dimension dominating, which C=1 would all but flatten.) The
    scaling is folded into the weights: the head is still one dot product with the raw pools.
    """

    def fit_head(self, samples: Sequence[Sample], sources: Sequence[str]) -> EmbeddingHead:
        from sklearn.linear_model import LogisticRegression

        keep = [i for i, s in enumerate(samples) if not s.attack or s.text.find(s.attack) < self.head_chars]
        raw = self.vectors([samples[i] for i in keep]).astype(np.float64)
        mu, sd = raw.mean(0), np.maximum(raw.std(0), 1e-6) * math.sqrt(raw.shape[1])
        y = np.array([samples[i].label for i in keep])
        hw = self._cell_weights([samples[i] for i in keep], {j: sources[i] for j, i in enumerate(keep)})
        lr = LogisticRegression(C=HEAD_C, max_iter=5000, random_state=0)
        lr.fit((raw - mu) / sd, y, sample_weight=hw)
        w = lr.coef_[0] / sd
        return EmbeddingHead(w.astype(np.float32), float(lr.intercept_[0] - w @ mu))


def _sigmoid(z: F64) -> F64:
    out: F64 = 1.0 / (1.0 + np.exp(-z))
    return out


@dataclass
class Fold:
    """A model fitted on some sources (the harness's ``Model``), plus the head-alone threshold chosen inside them."""

    model: Model
    head_threshold: float


def fit_fold(trainer: Trainer, by_source: Mapping[str, list[Sample]], names: Sequence[str]) -> Fold:
    """``injection_loso.fit_model``, also choosing the head-alone threshold on the same inner out-of-fold scores."""
    scores, y, srcs = inner_scores(trainer, by_source, names)
    stacker = fit_stacker(scores, y, srcs, True)
    threshold = choose_threshold(combined(stacker, scores, True), y, srcs)
    plain = fit_stacker(scores, y, srcs, False)
    plain_threshold = choose_threshold(combined(plain, scores, False), y, srcs)
    head_threshold = choose_threshold(_sigmoid(scores.head), y, srcs)
    model = Model(trainer.fit_sources(by_source, names), stacker, threshold, plain, plain_threshold)
    return Fold(model, head_threshold)


def _rows(source: str, fold: Fold, scores: Scores, y: np.ndarray, ngram: bool) -> list[FoldResult]:
    m = fold.model
    out = [_result(source, "n-gram", combined(m.plain_stacker, scores, False), y, m.plain_threshold)] if ngram else []
    out.append(_result(source, "head", _sigmoid(scores.head), y, fold.head_threshold))
    out.append(_result(source, "stacked", combined(m.stacker, scores, True), y, m.threshold))
    return out


def run_variant(
    variant: Variant,
    by_source: Mapping[str, list[Sample]],
    cache: PoolCache,
    *,
    ngram: bool,
    progress: Callable[[str], object] = lambda _: None,
) -> list[FoldResult]:
    """Every source held out in turn, then LoCoMo under the model fitted on all six; ``ngram`` adds today's path."""

    def embed(texts: Sequence[str]) -> F32:
        return features(cache.get(texts), variant.blocks)

    trainer = PoolTrainer(embed)
    if variant.reads_all:
        trainer.head_chars = math.inf
    rows: list[FoldResult] = []
    for held in SOURCES:
        fold = fit_fold(trainer, by_source, [n for n in SOURCES if n != held])
        samples = by_source[held]
        rows += _rows(
            held, fold, trainer.score(fold.model.fitted, samples), np.array([s.label for s in samples]), ngram
        )
        progress(f"{variant.name}: held out {held}")
    if "locomo" in by_source:
        fold = fit_fold(trainer, by_source, list(SOURCES))
        samples = by_source["locomo"]
        rows += _rows(
            "locomo", fold, trainer.score(fold.model.fitted, samples), np.zeros(len(samples), dtype=np.int64), ngram
        )
    return rows


def _fmt(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def table(results: Mapping[str, list[FoldResult]]) -> str:
    """One markdown table: per held-out source, today's n-gram path, then each variant's head alone and stacked."""
    lines = [
        "| held-out source | variant | path | attacks | recall | benign | FPR | AUC | threshold |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for source in [*SOURCES, "locomo"]:
        for name, rows in results.items():
            for r in rows:
                if r.source != source:
                    continue
                label = "" if r.path == "n-gram" else name
                lines.append(
                    f"| {source} | {label} | {r.path} | {r.attacks} | {_fmt(r.recall)} | {r.benign} | "
                    f"{_fmt(r.fpr)} | {_fmt(r.auc)} | {r.threshold:.3f} |"
                )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Fill the pool cache, run the variants, write the table to stdout (and the rows as JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="the injection data folder (FORMAT.md)")
    parser.add_argument("--locomo", type=Path, default=None, help="locomo JSON: benign turns, never fitted on")
    parser.add_argument("--variant", action="append", choices=[v.name for v in VARIANTS], help="default: all")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    by_source = load_sources(args.data, args.locomo)
    cache = PoolCache()

    def say(line: str) -> None:
        sys.stderr.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    cache.fill([s.text for rows in by_source.values() for s in rows], progress=say)
    results: dict[str, list[FoldResult]] = {}
    for i, variant in enumerate(v for v in VARIANTS if not args.variant or v.name in args.variant):
        results[variant.name] = run_variant(variant, by_source, cache, ngram=i == 0, progress=say)
    seconds = time.perf_counter() - start
    load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    sys.stdout.write(f"Token-state heads, leave one source out; `{cache.identity}`; load {load}; {seconds:.0f} s.\n\n")
    sys.stdout.write(table(results) + "\n")
    if args.json is not None:
        body = {
            "embedder": cache.identity,
            "seconds": seconds,
            "variants": {
                name: [
                    {
                        "source": r.source,
                        "path": r.path,
                        "attacks": r.attacks,
                        "caught": r.caught,
                        "benign": r.benign,
                        "flagged": r.flagged,
                        "auc": None if math.isnan(r.auc) else r.auc,
                        "threshold": r.threshold,
                    }
                    for r in rows
                ]
                for name, rows in results.items()
            },
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
