"""Runtimes of the bundled MiniLM: tokenizer, a torch runner, the local ONNX export and an OpenVINO runner."""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from memlane.embedding._common import MINILM_NAME, minilm_version, set_offline_env
from memlane.errors import EmbeddingError

log = logging.getLogger(__name__)

MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
EXPORT_FORMAT = 1  # bump when the exported graph changes
MIN_AGREEMENT = 0.9999  # cosine an accelerated run must reach against torch to share the identity
IntArray = npt.NDArray[np.int64]

# Probes checked once per export: short and long, plain and odd, so padding and truncation are exercised.
PROBES = (
    "hi",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Painting a sunrise by the lake with the kids is my favourite way to unwind after work!",
    "What did the user say about their dog's vet appointment?",
    "Ünïcödé, emojis 🎉 and numbers 12345 -- mixed together; with [brackets] & symbols.",
    " ".join(["A long turn about hiking, cooking pasta, moving to Berlin and adopting a beagle called Biscuit."] * 20),
)


class Runner(Protocol):
    """Maps padded token ids and their attention mask to unit mean-pooled sentence vectors."""

    name: str

    def __call__(self, ids: IntArray, mask: IntArray) -> npt.NDArray[np.float32]: ...


class Tokenizer:
    """The model's fast tokenizer, unpadded and truncated to ``MAX_TOKENS`` as sentence-transformers does."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer as HFTokenizer

        self._tok = HFTokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tok.no_padding()  # the shipped tokenizer.json pads every text to 128 tokens
        self._tok.enable_truncation(max_length=MAX_TOKENS)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, with [CLS] and [SEP]."""
        return [enc.ids for enc in self._tok.encode_batch(list(texts))]


def pad(token_ids: Sequence[Sequence[int]]) -> tuple[IntArray, IntArray]:
    """Right-pad to the longest sequence of the batch: ``(input_ids, attention_mask)``."""
    width = max(len(t) for t in token_ids)
    ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask


class TorchRunner:
    """Runs the transformer with torch directly (no sentence-transformers overhead): mean pooling, L2 norm."""

    name = "torch-f32"

    def __init__(self, model_dir: Path) -> None:
        set_offline_env()
        import torch
        from transformers import AutoModel

        self.torch = torch
        self.model = AutoModel.from_pretrained(str(model_dir)).eval()
        self.module = _pooled_module(torch, self.model)

    def __call__(self, ids: IntArray, mask: IntArray) -> npt.NDArray[np.float32]:
        torch = self.torch
        with torch.inference_mode():
            out = self.module(torch.from_numpy(ids), torch.from_numpy(mask))
        return np.asarray(out.numpy(), dtype=np.float32)


def _pooled_module(torch: Any, model: Any) -> Any:
    """``model`` followed by attention-masked mean pooling and L2 normalisation, as one module."""

    class Pooled(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    return Pooled().eval()


def import_openvino() -> Any:
    """Import the OpenVINO runtime without its model-conversion tools (``openvino.tools.ovc``).

    A plain ``import openvino`` imports ``ovc``, and importing ``ovc`` sends a usage event to Intel's telemetry
    unless the user opted out. memlane only reads an ONNX file, needs no ``ovc``, and must not reach the network.
    """
    if "openvino" in sys.modules:
        return sys.modules["openvino"]
    blocked = "openvino.tools.ovc"
    sys.modules[blocked] = None  # type: ignore[assignment]  # makes `from openvino.tools.ovc import ...` fail
    try:
        return importlib.import_module("openvino")  # which catches that ImportError and goes on
    finally:
        if blocked in sys.modules and sys.modules[blocked] is None:
            del sys.modules[blocked]


class OpenVINORunner:
    """Runs the locally exported ONNX graph with OpenVINO; bf16 matmuls where the CPU has them natively."""

    def __init__(self, onnx_path: Path, *, precision: str, num_threads: int | None) -> None:
        core = import_openvino().Core()
        if precision == "auto":
            capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
            precision = "bf16" if "BF16" in capabilities else "f32"
        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": "LATENCY"}
        if num_threads:
            config["INFERENCE_NUM_THREADS"] = num_threads
        self._compiled = core.compile_model(core.read_model(str(onnx_path)), "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._lock = threading.Lock()  # one infer request: its output buffer is reused between calls
        self.name = f"openvino-{precision}"

    def __call__(self, ids: IntArray, mask: IntArray) -> npt.NDArray[np.float32]:
        with self._lock:
            result = self._request.infer({"input_ids": ids, "attention_mask": mask})
            return np.array(result[0], dtype=np.float32, copy=True)


def onnx_path(cache_dir: Path) -> Path:
    """Where the exported graph of this bundled-model version is cached."""
    return cache_dir / f"{MINILM_NAME}-{minilm_version()}-meanpool-v{EXPORT_FORMAT}.onnx"


def _source_stamp(model_dir: Path) -> dict[str, Any]:
    weights = model_dir / "model.safetensors"
    return {"format": EXPORT_FORMAT, "model_version": minilm_version(), "weights_bytes": weights.stat().st_size}


def cached_export(cache_dir: Path, model_dir: Path) -> Path | None:
    """The cached, validated ONNX export if it exists and matches the bundled weights, else ``None``."""
    path = onnx_path(cache_dir)
    try:
        stamp = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not path.is_file() or stamp.get("source") != _source_stamp(model_dir):
        return None
    return path


def export_onnx(torch_runner: TorchRunner, cache_dir: Path) -> Path:
    """Export the pooled model to ONNX under ``cache_dir`` (atomically); the stamp is written by ``validate``."""
    torch = torch_runner.torch
    path = onnx_path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    ids, mask = pad([[101, 7592, 2088, 102], [101, 7592, 102]])
    try:
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")  # tracer and deprecation chatter of the TorchScript exporter
            torch.onnx.export(
                torch_runner.module,
                (torch.from_numpy(ids), torch.from_numpy(mask)),
                str(tmp),
                input_names=["input_ids", "attention_mask"],
                output_names=["embedding"],
                dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}},
                opset_version=17,
                dynamo=False,
            )
        os.replace(tmp, path)
    except Exception as e:
        tmp.unlink(missing_ok=True)
        raise EmbeddingError(f"could not export {MINILM_NAME} to ONNX under {cache_dir}: {e}") from e
    log.info("exported %s to %s", MINILM_NAME, path)
    return path


def agreement(reference: Runner, candidate: Runner, tokenizer: Tokenizer) -> float:
    """Lowest cosine between the two runners' vectors over the probe texts, batched and one by one."""
    tokens = tokenizer.encode(PROBES)
    ref = reference(*pad(tokens))
    got = candidate(*pad(tokens))
    single = np.concatenate([candidate(*pad([t])) for t in tokens])
    return float(min(np.min(np.sum(ref * got, axis=1)), np.min(np.sum(ref * single, axis=1))))


def write_stamp(path: Path, model_dir: Path, *, runner: str, cosine: float) -> None:
    """Mark an export as validated against torch."""
    stamp = {"source": _source_stamp(model_dir), "validated_with": runner, "min_cosine": cosine}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.json.tmp")
    tmp.write_text(json.dumps(stamp, indent=1), encoding="utf-8")
    os.replace(tmp, path.with_suffix(".json"))
