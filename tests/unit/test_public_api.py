"""The public API is exactly what __all__ says, and importing memlane stays light."""

from __future__ import annotations

import subprocess
import sys

import memlane

EXPECTED = {
    "AddResult", "Answer", "ArchivedMemory", "Config", "ConfigError", "Context", "CorruptStoreError", "Document", "Embedder", "EmbedderMismatchError",
    "EmbeddingError", "Filters", "HistoryEntry", "HistoryEvent", "Hit", "ImportFormatError", "Job", "JobState", "JobTimeoutError", "MemlaneError",
    "Memory", "MemoryItem", "MemoryKind", "Message", "MissingDependencyError", "Passage", "MissingScopeError",
    "NotFoundError", "Observation", "RetrievalError", "RetrievalPreset", "SchemaError", "ScoreBreakdown", "SourceRef", "Stats", "StoreError",
    "SurvivalWeights", "UnknownFilterError", "ValidationError", "__version__",
}  # fmt: skip


def test_all_is_exact() -> None:
    assert set(memlane.__all__) == EXPECTED
    assert len(memlane.__all__) == len(EXPECTED)
    for name in memlane.__all__:
        assert hasattr(memlane, name), name


def test_every_error_is_a_memlane_error() -> None:
    for name in memlane.__all__:
        obj = getattr(memlane, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, memlane.MemlaneError), name


def test_import_does_not_load_torch() -> None:
    code = "import sys, memlane; print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
