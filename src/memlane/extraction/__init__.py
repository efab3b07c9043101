"""Extraction: typed candidate memories from conversation turns, by offline rules or a language model."""

from memlane.extraction.base import (
    DEFAULT_MIN_CONFIDENCE,
    Candidate,
    ExtractionFailure,
    ExtractionResult,
    Extractor,
)
from memlane.extraction.llm import LLMExtractor
from memlane.extraction.offline import RuleExtractor

__all__ = [
    "DEFAULT_MIN_CONFIDENCE",
    "Candidate",
    "ExtractionFailure",
    "ExtractionResult",
    "Extractor",
    "LLMExtractor",
    "RuleExtractor",
]
