"""An exact fp32 BERT encoder in numpy: runs the bundled all-MiniLM-L6-v2 safetensors without torch.

Written by hand because no maintained library runs a BERT safetensors file without torch or a graph export: the
forward pass is ~60 lines of matmuls, and numpy's BLAS runs it at sentence-transformers' precision (cosine >= 0.9999).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]

# Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, and BERT's GELU is the exact erf form.
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_P = 0.3275911


def _erf(x: F32) -> F32:
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + _P * a)
    poly = ((((_A[4] * t + _A[3]) * t + _A[2]) * t + _A[1]) * t + _A[0]) * t
    return np.asarray(sign * (1.0 - poly * np.exp(-a * a)), dtype=np.float32)


def _gelu(x: F32) -> F32:
    return np.asarray(0.5 * x * (1.0 + _erf(x * np.float32(1 / math.sqrt(2.0)))), dtype=np.float32)


def _layer_norm(x: F32, gain: F32, bias: F32, eps: float) -> F32:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    return np.asarray(centred / np.sqrt(var + eps) * gain + bias, dtype=np.float32)


@dataclass(frozen=True)
class _Layer:
    qkv_w: F32  # (hidden, 3 * hidden): query, key and value projections fused into one matmul
    qkv_b: F32
    out_w: F32
    out_b: F32
    ln1_g: F32
    ln1_b: F32
    up_w: F32
    up_b: F32
    down_w: F32
    down_b: F32
    ln2_g: F32
    ln2_b: F32


class NumpyBert:
    """A BERT encoder's last hidden state, mean pooled over the attention mask (not normalised)."""

    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file

        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        w = {k: np.asarray(v, dtype=np.float32) for k, v in load_file(str(model_dir / "model.safetensors")).items()}
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        w = {k.removeprefix(prefix): v for k, v in w.items()}
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.emb_g = w["embeddings.LayerNorm.weight"]
        self.emb_b = w["embeddings.LayerNorm.bias"]
        self.layers = [self._layer(w, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))]

    @staticmethod
    def _layer(w: dict[str, F32], p: str) -> _Layer:
        def t(name: str) -> F32:
            return np.ascontiguousarray(w[p + name].T)

        qkv = ("query", "key", "value")
        return _Layer(
            qkv_w=np.ascontiguousarray(np.concatenate([w[f"{p}attention.self.{n}.weight"] for n in qkv]).T),
            qkv_b=np.concatenate([w[f"{p}attention.self.{n}.bias"] for n in qkv]),
            out_w=t("attention.output.dense.weight"),
            out_b=w[p + "attention.output.dense.bias"],
            ln1_g=w[p + "attention.output.LayerNorm.weight"],
            ln1_b=w[p + "attention.output.LayerNorm.bias"],
            up_w=t("intermediate.dense.weight"),
            up_b=w[p + "intermediate.dense.bias"],
            down_w=t("output.dense.weight"),
            down_b=w[p + "output.dense.bias"],
            ln2_g=w[p + "output.LayerNorm.weight"],
            ln2_b=w[p + "output.LayerNorm.bias"],
        )

    def __call__(self, ids: IntArray, mask: IntArray) -> F32:
        batch, tokens = ids.shape
        heads, width = self.heads, self.hidden // self.heads
        x = self.word[ids] + self.position[:tokens][None] + self.token_type
        x = _layer_norm(x, self.emb_g, self.emb_b, self.eps)
        blocked = np.where(mask[:, None, None, :] > 0, np.float32(0), np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1 / math.sqrt(width))
        for layer in self.layers:
            qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(batch, tokens, 3, heads, width).transpose(2, 0, 3, 1, 4)
            scores = (qkv[0] @ qkv[1].transpose(0, 1, 3, 2)) * scale + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            attended = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(batch, tokens, self.hidden)
            x = _layer_norm(attended @ layer.out_w + layer.out_b + x, layer.ln1_g, layer.ln1_b, self.eps)
            up = _gelu(np.asarray(x @ layer.up_w + layer.up_b, dtype=np.float32))
            x = _layer_norm(up @ layer.down_w + layer.down_b + x, layer.ln2_g, layer.ln2_b, self.eps)
        weights = mask[..., None].astype(np.float32)
        pooled = (x * weights).sum(1) / np.maximum(weights.sum(1), np.float32(1e-9))
        return np.asarray(pooled, dtype=np.float32)
