"""Leave-one-source-out training and evaluation of the injection detector (``memlane bench injection --loso``).

For each training source in turn (``injection_data.SOURCES``) the detector is fitted on the other sources and
scored on the one left out, at a threshold chosen without it: inside the remaining sources, each is left out once
more (inner folds), the stacker that weighs the n-gram classifier against the embedding head is fitted on those
out-of-fold scores, and the threshold is the lowest that keeps the false-positive rate of every remaining benign
source within ``FPR_BUDGET``. LoCoMo turns are never fitted on; they are scored by the model fitted on every source.
The model fitted on every source, with its stacker and threshold chosen the same way, is what ships.

Nothing here reads the left-out source before its scores are computed: the settings that are not chosen by the
inner folds (the regularisation strengths, the head's features, the window size) are fixed constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memlane.bench.injection_data import SOURCES, Sample
from memlane.errors import MissingDependencyError
from memlane.security.classifier import BITS, ClassifierModel, feature_ids, windows
from memlane.security.detect import RulesDetector
from memlane.security.head import EmbeddingHead, Stacker, stack_features
from memlane.security.obfuscation import unmask

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

NGRAM_C: float = 16.0  # fixed, not searched: the inner folds choose only the stacker and the threshold
HEAD_C: float = 1.0
FPR_BUDGET: float = 0.02  # spent on the inner out-of-fold scores, under the 0.03 target for margin
FIT_TABLES: int = 3  # the n-gram classifier fits on one BIPIA table context in this many (they are 3,600 texts)
HEAD_CHARS: int = 1000  # an attack further in than this is past what the embedding read (256 tokens)

Embed = Callable[[Sequence[str]], F32]


@dataclass
class Fitted:
    """An n-gram classifier and (optionally) an embedding head fitted on some sources."""

    ngram: ClassifierModel
    head: EmbeddingHead | None


@dataclass
class Scores:
    """What the parts say of each sample: the n-gram logit (highest over its views), the head's logit, the rules'
    evidence, and the sample's length in characters.
    """

    ngram: F64
    head: F64
    rules: F64
    chars: F64

    def take(self, rows: npt.NDArray[np.int64]) -> Scores:
        return Scores(self.ngram[rows], self.head[rows], self.rules[rows], self.chars[rows])

    @staticmethod
    def join(parts: Sequence[Scores]) -> Scores:
        return Scores(
            np.concatenate([p.ngram for p in parts]),
            np.concatenate([p.head for p in parts]),
            np.concatenate([p.rules for p in parts]),
            np.concatenate([p.chars for p in parts]),
        )


class Trainer:
    """Fits and scores the detector's parts on lists of samples, caching features and embeddings by text."""

    def __init__(self, embed: Embed | None) -> None:
        self.embed = embed
        self.head_chars: float = HEAD_CHARS  # attacks the head may learn from start before this character
        self._features: dict[str, npt.NDArray[np.int64]] = {}
        self._vectors: dict[str, F32] = {}
        self._rules = RulesDetector()
        self._fitted: dict[frozenset[str], Fitted] = {}

    # -- features --------------------------------------------------------------------------------------------
    def _ids(self, text: str) -> npt.NDArray[np.int64]:
        ids = self._features.get(text)
        if ids is None:
            ids = self._features[text] = feature_ids(text)
        return ids

    def vectors(self, samples: Sequence[Sample]) -> F32:
        """The embedding of each sample's text (as ingest embeds it), computed once per distinct text."""
        if self.embed is None:
            raise ValueError("no embedder")
        missing = list(dict.fromkeys(s.text for s in samples if s.text not in self._vectors))
        for start in range(0, len(missing), 256):
            chunk = missing[start : start + 256]
            for text, vec in zip(chunk, self.embed(chunk), strict=True):
                self._vectors[text] = vec.astype(np.float32)
        return np.vstack([self._vectors[s.text] for s in samples]) if samples else np.zeros((0, 0), np.float32)

    # -- fitting ---------------------------------------------------------------------------------------------
    @staticmethod
    def _cell_weights(samples: Sequence[Sample], source_of: Mapping[int, str]) -> F64:
        """Every (source, label) cell weighs the same in total, so BIPIA's 3,600 tables do not drown the rest."""
        cells: dict[tuple[str, int], int] = {}
        for i, s in enumerate(samples):
            key = (source_of[i], s.label)
            cells[key] = cells.get(key, 0) + 1
        return np.array([len(samples) / (len(cells) * cells[(source_of[i], s.label)]) for i, s in enumerate(samples)])

    def fit_sources(self, by_source: Mapping[str, list[Sample]], names: Sequence[str]) -> Fitted:
        """``fit`` on every sample of the sources ``names``; the same set of sources is fitted once (an inner fold
        of one outer fold is often an inner fold of another).
        """
        key = frozenset(names)
        fitted = self._fitted.get(key)
        if fitted is None:
            ordered = sorted(key)
            samples = [s for n in ordered for s in by_source[n]]
            fitted = self._fitted[key] = self.fit(samples, [n for n in ordered for _ in by_source[n]])
        return fitted

    def fit(self, samples: Sequence[Sample], sources: Sequence[str]) -> Fitted:
        """The n-gram classifier and the head, fitted on ``samples`` (``sources[i]`` names the source of each)."""
        try:
            from scipy.sparse import csr_matrix  # type: ignore[import-untyped]
            from sklearn.linear_model import LogisticRegression
        except ImportError as exc:
            raise MissingDependencyError("training the injection detector", "bench") from exc
        thin = [
            i for i, s in enumerate(samples) if sources[i] != "bipia-table" or int(s.group[:8], 16) % FIT_TABLES == 0
        ]
        weight = self._cell_weights([samples[i] for i in thin], dict(enumerate(sources[i] for i in thin)))
        rows: list[npt.NDArray[np.int64]] = []
        cols: list[npt.NDArray[np.int64]] = []
        labels: list[int] = []
        weights: list[float] = []
        for s, w in zip([samples[i] for i in thin], weight, strict=True):
            views = training_views(s)
            for text, label in views:
                ids = self._ids(text)
                rows.append(np.full(ids.size, len(labels)))
                cols.append(ids)
                labels.append(label)
                weights.append(w / len(views))
        r, c = np.concatenate(rows), np.concatenate(cols)
        counts = np.bincount(r, minlength=len(labels)).astype(np.float64)
        x = csr_matrix((1.0 / np.sqrt(np.maximum(counts[r], 1.0)), (r, c)), shape=(len(labels), 1 << BITS))
        clf = LogisticRegression(C=NGRAM_C, tol=1e-3, max_iter=2000, solver="liblinear", random_state=0)
        clf.fit(x, np.array(labels), sample_weight=np.array(weights))
        ngram = ClassifierModel(clf.coef_[0].astype(np.float32), float(clf.intercept_[0]), 0.5, BITS)
        return Fitted(ngram, self.fit_head(samples, sources) if self.embed is not None else None)

    def fit_head(self, samples: Sequence[Sample], sources: Sequence[str]) -> EmbeddingHead:
        """The embedding head: a logistic regression over the vectors, each (source, label) cell weighing the same."""
        from sklearn.linear_model import LogisticRegression

        # an attack past what the embedding read would teach the head that benign text is an attack
        keep = [i for i, s in enumerate(samples) if not s.attack or s.text.find(s.attack) < self.head_chars]
        vecs = self.vectors([samples[i] for i in keep])
        y = np.array([samples[i].label for i in keep])
        hw = self._cell_weights([samples[i] for i in keep], {j: sources[i] for j, i in enumerate(keep)})
        lr = LogisticRegression(C=HEAD_C, max_iter=5000, random_state=0)
        lr.fit(vecs, y, sample_weight=hw)
        return EmbeddingHead(lr.coef_[0].astype(np.float32), float(lr.intercept_[0]))

    # -- scoring ---------------------------------------------------------------------------------------------
    def score(self, fitted: Fitted, samples: Sequence[Sample]) -> Scores:
        """What each part says of each sample."""
        unmasked = [unmask(s.text) for s in samples]
        ngram = np.array(fitted.ngram.logits_of(unmasked), dtype=np.float64)
        head = np.zeros(len(samples))
        if fitted.head is not None and samples:
            head = fitted.head.logits(self.vectors(samples)).astype(np.float64)
        rules = np.array([self._rules.evidence_of(u)[0] for u in unmasked])
        chars = np.array([float(len(s.text)) for s in samples])
        return Scores(ngram, head, rules, chars)


def training_views(sample: Sample) -> list[tuple[str, int]]:
    """The texts one sample trains the n-gram classifier on: the whole; for a long document also its windows, an
    indirect injection's windows labelled 1 only where they hold the inserted attack.
    """
    text = unmask(sample.text).text
    out = [(text, sample.label)]
    parts = windows(text)
    if len(parts) > 1 and (sample.label == 0 or sample.attack):
        marker = unmask(sample.attack).text[:20]
        out += [(p, int(bool(marker) and marker in p)) for p in parts]
    return out


def combined(stacker: Stacker, scores: Scores, use_head: bool) -> F64:
    """The detector's score: the noisy-or of the rules' evidence and the stacker's probability."""
    z = stacker.logits(stack_features(scores.ngram, scores.head if use_head else None, scores.chars))
    p = 1.0 / (1.0 + np.exp(-z))
    return 1.0 - (1.0 - np.clip(scores.rules, 0.0, 1.0)) * (1.0 - p)


def fit_stacker(scores: Scores, labels: npt.NDArray[np.int64], sources: Sequence[str], use_head: bool) -> Stacker:
    """A logistic regression over the parts' out-of-fold logits, each (source, label) cell weighing the same."""
    from sklearn.linear_model import LogisticRegression

    x = stack_features(scores.ngram, scores.head if use_head else None, scores.chars)
    cells: dict[tuple[str, int], int] = {}
    for src, y in zip(sources, labels.tolist(), strict=True):
        cells[(src, y)] = cells.get((src, y), 0) + 1
    w = np.array([1.0 / cells[(src, y)] for src, y in zip(sources, labels.tolist(), strict=True)])
    w = w * len(w) / w.sum()
    lr = LogisticRegression(C=1.0, max_iter=2000, random_state=0)
    lr.fit(x, labels, sample_weight=w)
    coef = lr.coef_[0].astype(np.float64)
    if coef[1] > 0:  # the window count may only discount a long text's highest window, never reward length
        rest = [i for i in range(x.shape[1]) if i != 1]
        lr.fit(x[:, rest], labels, sample_weight=w)
        coef = np.insert(lr.coef_[0].astype(np.float64), 1, 0.0)
    return Stacker(coef, float(lr.intercept_[0]))


def choose_threshold(scores: F64, labels: npt.NDArray[np.int64], sources: Sequence[str]) -> float:
    """The lowest threshold keeping the false-positive rate of every benign source (30+ texts) within budget."""
    needed = 0.0
    src = np.array(sources)
    for name in sorted(set(sources)):
        benign = scores[(src == name) & (labels == 0)]
        if benign.size < 30:
            continue
        ranked = np.sort(benign)[::-1]
        allowed = math.floor(FPR_BUDGET * benign.size)
        if allowed < ranked.size:
            needed = max(needed, float(ranked[allowed]) + 1e-6)
    return min(max(needed, 0.05), 1.0)


@dataclass
class Model:
    """A detector fitted on some sources, with its stacker and threshold (with and without the head)."""

    fitted: Fitted
    stacker: Stacker
    threshold: float
    plain_stacker: Stacker  # the same without the head: for embedders it was not trained for
    plain_threshold: float
    inner: dict[str, Scores] = field(default_factory=dict)


def inner_scores(
    trainer: Trainer, by_source: Mapping[str, list[Sample]], names: Sequence[str]
) -> tuple[Scores, npt.NDArray[np.int64], list[str]]:
    """Out-of-fold scores inside ``names`` (each left out once, scored by a fit on the others), their labels and
    the source of each row.
    """
    oof: list[Scores] = []
    labels: list[int] = []
    srcs: list[str] = []
    for held in names:
        fitted = trainer.fit_sources(by_source, [n for n in names if n != held])
        oof.append(trainer.score(fitted, by_source[held]))
        labels += [s.label for s in by_source[held]]
        srcs += [held] * len(by_source[held])
    return Scores.join(oof), np.array(labels), srcs


def fit_model(trainer: Trainer, by_source: Mapping[str, list[Sample]], names: Sequence[str]) -> Model:
    """Fit on ``names``: inner folds leave each out once for the stacker and threshold, then fit on all of them."""
    scores, y, srcs = inner_scores(trainer, by_source, names)
    use_head = trainer.embed is not None
    stacker = fit_stacker(scores, y, srcs, use_head)
    threshold = choose_threshold(combined(stacker, scores, use_head), y, srcs)
    plain = fit_stacker(scores, y, srcs, False)
    plain_threshold = choose_threshold(combined(plain, scores, False), y, srcs)
    fitted = trainer.fit_sources(by_source, names)
    return Model(fitted, stacker, threshold, plain, plain_threshold)


def auc(scores: F64, labels: npt.NDArray[np.int64]) -> float:
    """ROC AUC by the rank-sum formula (ties count half); NaN when one class is absent."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not pos.size or not neg.size:
        return math.nan
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    allv = np.concatenate([pos, neg])[order]
    ranks = np.empty(allv.size)
    i = 0
    while i < allv.size:
        j = i
        while j + 1 < allv.size and allv[j + 1] == allv[i]:
            j += 1
        ranks[i : j + 1] = (i + j) / 2 + 1
        i = j + 1
    r = np.empty(allv.size)
    r[order] = ranks
    return float((r[: pos.size].sum() - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))


@dataclass(frozen=True)
class FoldResult:
    """One held-out source: its size, recall and false-positive rate at the threshold chosen without it, AUC."""

    source: str
    attacks: int
    caught: int
    benign: int
    flagged: int
    auc: float
    threshold: float
    path: str  # "embedding" (n-gram + head + rules) or "n-gram" (no head)
    # The best recall any threshold could give on this source with its FPR within TARGET_FPR, the threshold read off
    # the held-out source itself: not an estimate (no rule can choose it without the source), an upper bound on what
    # choosing the threshold better could reach with these scores. NaN without both classes.
    ceiling: float = math.nan

    @property
    def recall(self) -> float:
        return self.caught / self.attacks if self.attacks else math.nan

    @property
    def fpr(self) -> float:
        return self.flagged / self.benign if self.benign else math.nan


TARGET_FPR: float = 0.03  # the bar for a held-out benign source


def recall_ceiling(scores: F64, labels: npt.NDArray[np.int64], fpr: float = TARGET_FPR) -> float:
    """The highest recall at any threshold that flags at most ``fpr`` of the benign scores (ties flagged together:
    a threshold cannot separate equal scores). NaN when one class is absent.
    """
    attacks, benign = scores[labels == 1], np.sort(scores[labels == 0])[::-1]
    if not attacks.size or not benign.size:
        return math.nan
    allowed = math.floor(fpr * benign.size + 1e-9)
    if allowed >= benign.size:
        return 1.0
    # flag everything strictly above the first benign score that must stay unflagged; an equal score above the
    # budget drags the whole tie group down with it
    bar = benign[allowed]
    return float((attacks > bar).mean())


def _result(source: str, path: str, scores: F64, labels: npt.NDArray[np.int64], threshold: float) -> FoldResult:
    hit = scores >= threshold
    return FoldResult(
        source,
        int((labels == 1).sum()),
        int(hit[labels == 1].sum()),
        int((labels == 0).sum()),
        int(hit[labels == 0].sum()),
        auc(scores, labels),
        threshold,
        path,
        recall_ceiling(scores, labels),
    )


def loso(
    trainer: Trainer, by_source: Mapping[str, list[Sample]], progress: Callable[[str], object] = lambda _: None
) -> tuple[list[FoldResult], Model]:
    """Each source of ``SOURCES`` held out in turn (both paths: with and without the head), then the model fitted
    on all of them, scored on LoCoMo when present. Returns the rows and that final model.
    """
    rows: list[FoldResult] = []
    use_head = trainer.embed is not None
    for held in SOURCES:
        names = [n for n in SOURCES if n != held]
        model = fit_model(trainer, by_source, names)
        samples = by_source[held]
        scores = trainer.score(model.fitted, samples)
        y = np.array([s.label for s in samples])
        if use_head:
            rows.append(_result(held, "embedding", combined(model.stacker, scores, True), y, model.threshold))
        rows.append(_result(held, "n-gram", combined(model.plain_stacker, scores, False), y, model.plain_threshold))
        progress(f"held out {held}: " + ", ".join(f"{r.path} recall {r.recall:.3f} FPR {r.fpr:.3f}" for r in rows[-2:]))
    final = fit_model(trainer, by_source, list(SOURCES))
    if "locomo" in by_source:
        samples = by_source["locomo"]
        scores = trainer.score(final.fitted, samples)
        y = np.zeros(len(samples), dtype=np.int64)
        if use_head:
            rows.append(_result("locomo", "embedding", combined(final.stacker, scores, True), y, final.threshold))
        rows.append(_result("locomo", "n-gram", combined(final.plain_stacker, scores, False), y, final.plain_threshold))
    return rows, final
