"""MiniLM's token states pooled per text, for detector experiments (``bench/injection_tokens.py``); not used by ingest.

The write embeds a text as the mean of MiniLM's last hidden state over its first 256 word pieces. An instruction
slipped into a long carrier moves that mean little, but it may stand out in single tokens' states. ``TokenPools``
runs the same q8 model and keeps four pools of those states per text (``BLOCKS``):

- ``mean_first`` and ``max_first``: the masked mean and the per-dimension max over the first pass, which reads what
  the write reads (``[CLS]``, the first 254 word pieces, ``[SEP]``); ``mean_first`` is the unnormalised sentence
  vector (up to the batch it ran in: the q8 model scales its activations over the whole batch).
- ``mean_all`` and ``max_all``: the same over every token of every pass, a long text being read in consecutive
  passes of 254 word pieces (each with its own ``[CLS]`` and ``[SEP]``); the mean is weighted by tokens.

``PoolCache`` keeps the pools on disk by the SHA-256 of each text (``~/.cache/memlane/bench``), since reading the
~8,700 texts of the injection sources takes tens of minutes on two cores.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from memlane.embedding._common import MINILM_DIM, default_cache_dir, q8_identity
from memlane.embedding._minilm_runtime import MAX_TOKENS, OnnxRunner, Tokenizer, pad

F32 = npt.NDArray[np.float32]

BLOCKS: Final = ("mean_first", "max_first", "mean_all", "max_all")
PASS_PIECES: Final = MAX_TOKENS - 2  # word pieces per pass, between its [CLS] and [SEP]
_UNBOUNDED: Final = 1 << 24  # tokenizer length limit that never truncates these texts


class TokenPools:
    """The default (q8) MiniLM run for its token states: ``pools(texts)`` is ``(len(texts), 4, 384)``, ``BLOCKS``."""

    def __init__(self, cache_dir: Path | None = None, *, batch_size: int = 16, num_threads: int | None = None) -> None:
        from memlane.embedding._quantize import q8_model

        self.identity = q8_identity()
        self._batch_size = batch_size
        self._tokenizer = Tokenizer(max_tokens=_UNBOUNDED)
        model = q8_model(cache_dir or default_cache_dir())  # the file MiniLMEmbedder(cache_dir) runs
        self._runner = OnnxRunner(model, name="onnxruntime-q8", num_threads=num_threads)

    def pools(self, texts: Sequence[str]) -> F32:
        """The four pools of each text; its passes are batched with other texts' passes of similar length."""
        passes: list[tuple[int, bool, list[int]]] = []  # (text, first pass of it, ids)
        for i, ids in enumerate(self._tokenizer.encode(list(texts))):
            cls, body, sep = ids[0], ids[1:-1], ids[-1]
            for start in range(0, max(len(body), 1), PASS_PIECES):
                passes.append((i, start == 0, [cls, *body[start : start + PASS_PIECES], sep]))
        n = len(texts)
        total = np.zeros((n, MINILM_DIM), dtype=np.float64)
        count = np.zeros(n, dtype=np.float64)
        top = np.full((n, MINILM_DIM), -np.inf, dtype=np.float32)
        out = np.zeros((n, len(BLOCKS), MINILM_DIM), dtype=np.float32)
        order = np.argsort([len(p[2]) for p in passes], kind="stable")
        for begin in range(0, len(passes), self._batch_size):
            batch = [passes[j] for j in order[begin : begin + self._batch_size]]
            hidden = self._runner.hidden(*pad([ids for _, _, ids in batch]))
            for row, (i, first, ids) in enumerate(batch):
                states = hidden[row, : len(ids)]
                if first:
                    out[i, 0] = states.mean(0)
                    out[i, 1] = states.max(0)
                total[i] += states.sum(0, dtype=np.float64)
                count[i] += len(ids)
                top[i] = np.maximum(top[i], states.max(0))
        out[:, 2] = (total / np.maximum(count, 1.0)[:, None]).astype(np.float32)
        out[:, 3] = top
        return out


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PoolCache:
    """``TokenPools`` kept on disk by the SHA-256 of each text; ``get`` computes (and saves) only what is missing."""

    def __init__(self, folder: Path | None = None, *, model: TokenPools | None = None, identity: str = "") -> None:
        self._model = model
        self.identity = model.identity if model is not None else identity or q8_identity()
        folder = folder or default_cache_dir().parent / "bench"
        self.path = folder / f"injection-tokenpools-{re.sub(r'[^A-Za-z0-9.=_-]+', '_', self.identity)}.npz"
        self._known: dict[str, F32] = {}
        if self.path.exists():
            with np.load(self.path, allow_pickle=False) as data:
                self._known = dict(zip(data["keys"].tolist(), data["pools"].astype(np.float32), strict=True))

    def __len__(self) -> int:
        return len(self._known)

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct texts of ``texts`` not cached yet."""
        return [t for t in dict.fromkeys(texts) if _key(t) not in self._known]

    def fill(
        self, texts: Sequence[str], *, group: int = 512, progress: Callable[[str], object] = lambda _: None
    ) -> None:
        """Compute the missing texts' pools, shortest first, ``group`` texts per call, saving after each group."""
        todo = sorted(self.missing(texts), key=len)
        if todo and self._model is None:
            self._model = TokenPools()
        for start in range(0, len(todo), group):
            chunk = todo[start : start + group]
            assert self._model is not None
            for text, pools in zip(chunk, self._model.pools(chunk), strict=True):
                self._known[_key(text)] = pools
            self.save()
            progress(f"{min(start + group, len(todo))}/{len(todo)} texts pooled")

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self._known)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), pools=np.stack([self._known[k] for k in keys]))
        tmp.replace(self.path)

    def get(self, texts: Sequence[str]) -> F32:
        """The pools of ``texts`` (``(n, 4, 384)``), computing the missing ones."""
        self.fill(texts)
        if not texts:
            return np.zeros((0, len(BLOCKS), MINILM_DIM), dtype=np.float32)
        return np.stack([self._known[_key(t)] for t in texts])
