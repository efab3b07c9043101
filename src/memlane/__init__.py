"""memlane: long-term memory for conversational AI, offline by default, with explainable hybrid retrieval.

The errors are imported at once; every other public name on first use, so that ``import memlane`` (and the
``memlane`` command's start-up) does not load the models, numpy or the store until they are needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from memlane.errors import (
    ConfigError,
    CorruptStoreError,
    EmbedderMismatchError,
    EmbeddingError,
    ImportFormatError,
    JobTimeoutError,
    MemlaneError,
    MissingDependencyError,
    MissingScopeError,
    NotFoundError,
    RetrievalError,
    SchemaError,
    StoreError,
    UnknownFilterError,
    ValidationError,
)

if TYPE_CHECKING:
    from memlane.answer import Answer, Context
    from memlane.config import Config, RetrievalPreset
    from memlane.embedding.base import Embedder
    from memlane.engine import Memory
    from memlane.lifecycle.survival import SurvivalWeights
    from memlane.models import (
        AddResult,
        ArchivedMemory,
        Document,
        Filters,
        HistoryEntry,
        HistoryEvent,
        Hit,
        Job,
        JobState,
        MemoryItem,
        MemoryKind,
        Message,
        Passage,
        ScoreBreakdown,
        SourceRef,
        Stats,
    )
    from memlane.observe import Observation

#: Where each lazily imported public name lives.
_LAZY = {
    "Answer": "memlane.answer",
    "Context": "memlane.answer",
    "Config": "memlane.config",
    "RetrievalPreset": "memlane.config",
    "Embedder": "memlane.embedding.base",
    "Memory": "memlane.engine",
    "SurvivalWeights": "memlane.lifecycle.survival",
    "Observation": "memlane.observe",
    **dict.fromkeys(
        (
            "AddResult",
            "ArchivedMemory",
            "Document",
            "Filters",
            "HistoryEntry",
            "HistoryEvent",
            "Hit",
            "Job",
            "JobState",
            "MemoryItem",
            "MemoryKind",
            "Message",
            "Passage",
            "ScoreBreakdown",
            "SourceRef",
            "Stats",
        ),
        "memlane.models",
    ),
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memlane' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "Answer",
    "ArchivedMemory",
    "Config",
    "ConfigError",
    "Context",
    "CorruptStoreError",
    "Document",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingError",
    "Filters",
    "HistoryEntry",
    "HistoryEvent",
    "Hit",
    "ImportFormatError",
    "Job",
    "JobState",
    "JobTimeoutError",
    "MemlaneError",
    "Memory",
    "MemoryItem",
    "MemoryKind",
    "Message",
    "MissingDependencyError",
    "MissingScopeError",
    "NotFoundError",
    "Observation",
    "Passage",
    "RetrievalError",
    "RetrievalPreset",
    "SchemaError",
    "ScoreBreakdown",
    "SourceRef",
    "Stats",
    "StoreError",
    "SurvivalWeights",
    "UnknownFilterError",
    "ValidationError",
    "__version__",
]
