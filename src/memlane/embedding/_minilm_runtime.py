"""Runtimes of all-MiniLM-L6-v2: the tokenizer, onnxruntime on the int8 ONNX file, numpy on the fp32 safetensors.

Each runner maps padded token ids and their mask to mean-pooled (not yet normalised) sentence vectors.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from memlane.embedding._common import int8_model_path, minilm_dir, tokenizer_json
from memlane.errors import EmbeddingError, MissingDependencyError

MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
IntArray = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]


class Runner(Protocol):
    """Maps padded token ids and their attention mask to mean-pooled sentence vectors."""

    name: str

    def __call__(self, ids: IntArray, mask: IntArray) -> F32: ...


# Plain text the fast path reads exactly as BERT's normaliser and pre-tokeniser do: printable ASCII with tabs and
# line breaks (nothing to clean, accent or case-fold beyond ASCII), and no "[" that could open a special token.
_NOT_PLAIN: Final = re.compile(r"[^\t\n\r\x20-\x7e]|\[")
# BERT's pre-tokens in such text, lower-cased: runs of letters and digits, and every other printable character alone.
_PIECE: Final = re.compile(r"[a-z0-9]+|[^a-z0-9\s]")
_WORD_CACHE: Final = 200_000  # distinct pre-tokens remembered before the cache starts again


class Tokenizer:
    """The model's WordPiece tokenizer (shipped with memlane), unpadded, truncated as sentence-transformers does.

    Plain ASCII text is split into BERT's pre-tokens by a regex and each distinct pre-token's word pieces are
    remembered (WordPiece reads every pre-token alone), so a repeated word costs one dictionary look-up; other
    text goes through ``tokenizers`` whole. Both give the ids ``tokenizers`` gives.
    """

    def __init__(self, max_tokens: int = MAX_TOKENS) -> None:
        try:
            from tokenizers import Tokenizer as HFTokenizer
        except ImportError as e:  # a base dependency: only a broken install gets here
            raise EmbeddingError("the `tokenizers` package is missing; reinstall memlane") from e
        self._tok = HFTokenizer.from_str(tokenizer_json())
        self._tok.no_padding()  # the shipped tokenizer.json pads every text to 128 tokens
        self._tok.enable_truncation(max_length=max_tokens)
        self._max_tokens = max_tokens
        cls, sep = self._tok.token_to_id("[CLS]"), self._tok.token_to_id("[SEP]")
        if cls is None or sep is None:
            raise EmbeddingError("the shipped tokenizer has no [CLS] or [SEP] token; reinstall memlane")
        self._cls, self._sep = int(cls), int(sep)
        self._pieces: dict[str, list[int]] = {}

    @property
    def vocab_size(self) -> int:
        return int(self._tok.get_vocab_size())

    def vocab(self) -> dict[str, int]:
        return dict(self._tok.get_vocab())

    def encode(self, texts: Sequence[str], *, special_tokens: bool = True) -> list[list[int]]:
        """Token ids of each text, with [CLS] and [SEP] unless ``special_tokens`` is false."""
        out = [self._plain(text, special_tokens) for text in texts]
        rest = [i for i, ids in enumerate(out) if ids is None]
        if rest:
            encoded = self._tok.encode_batch([texts[i] for i in rest], add_special_tokens=special_tokens)
            for i, enc in zip(rest, encoded, strict=True):
                out[i] = enc.ids
        return [ids if ids is not None else [] for ids in out]

    def _plain(self, text: str, special_tokens: bool) -> list[int] | None:
        """The ids of plain ASCII text from its pre-tokens' remembered word pieces; None for other text."""
        if _NOT_PLAIN.search(text):
            return None
        known = self._pieces
        ids: list[int] = []
        for piece in _PIECE.findall(text.lower()):
            pieces = known.get(piece)
            if pieces is None:
                if len(known) >= _WORD_CACHE:
                    known.clear()
                pieces = known[piece] = self._tok.encode(piece, add_special_tokens=False).ids
            ids += pieces
        if not special_tokens:
            return ids[: self._max_tokens]
        return [self._cls, *ids[: self._max_tokens - 2], self._sep]


def pad(token_ids: Sequence[Sequence[int]]) -> tuple[IntArray, IntArray]:
    """Right-pad to the longest sequence of the batch: ``(input_ids, attention_mask)``."""
    width = max(len(t) for t in token_ids)
    ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask


def mean_pool(hidden: F32, mask: IntArray) -> F32:
    """Attention-masked mean of token vectors, as sentence-transformers pools."""
    weights = mask[..., None].astype(np.float32)
    return np.asarray((hidden * weights).sum(1) / np.maximum(weights.sum(1), np.float32(1e-9)), dtype=np.float32)


class OnnxRunner:
    """An ONNX export of all-MiniLM-L6-v2 run by onnxruntime on the CPU: the shipped int8 file unless ``path`` (a
    file, or a model's bytes).
    """

    def __init__(
        self, path: Path | bytes | None = None, *, name: str = "onnxruntime-int8", num_threads: int | None = None
    ) -> None:
        self.name = name
        try:
            import onnxruntime as ort
        except ImportError as e:  # a base dependency: only a broken install gets here
            raise EmbeddingError("the `onnxruntime` package is missing; reinstall memlane") from e
        options = ort.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initialisers are noise here
        if num_threads:
            options.intra_op_num_threads = num_threads
            options.inter_op_num_threads = 1
        self._session: Any = ort.InferenceSession(
            path if isinstance(path, bytes) else str(path or int8_model_path()),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def __call__(self, ids: IntArray, mask: IntArray) -> F32:
        return mean_pool(self.hidden(ids, mask), mask)

    def hidden(self, ids: IntArray, mask: IntArray) -> F32:
        """The last hidden state of every token, ``(batch, tokens, 384)``, before pooling (padding rows included)."""
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]  # InferenceSession.run is thread-safe
        return np.asarray(hidden, dtype=np.float32)


class NumpyRunner:
    """The exact fp32 weights of ``memlane[fp32]`` run by a numpy BERT encoder (no torch)."""

    name = "numpy-fp32"

    def __init__(self) -> None:
        from memlane.embedding._bert_numpy import NumpyBert

        model_dir = minilm_dir()
        try:
            self._model = NumpyBert(model_dir)
        except ImportError as e:
            raise MissingDependencyError("the fp32 MiniLM (safetensors)", "fp32") from e
        self._lock = threading.Lock()  # numpy's BLAS already uses every core: one batch at a time

    def __call__(self, ids: IntArray, mask: IntArray) -> F32:
        with self._lock:
            return self._model(ids, mask)
