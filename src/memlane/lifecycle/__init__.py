"""Keeping typed memories consistent and bounded: dedup, consolidation with validity in time, and eviction."""

from memlane.lifecycle.consolidate import (
    Action,
    Consolidator,
    Decision,
    LLMConsolidator,
    Related,
    RuleConsolidator,
    is_valid_at,
    supersede,
)
from memlane.lifecycle.dedup import DedupThresholds, is_near_duplicate, merge_into, merge_sources, normalised_hash
from memlane.lifecycle.survival import SurvivalScore, SurvivalWeights, choose_evictions, decayed_importance, survival

__all__ = [
    "Action",
    "Consolidator",
    "Decision",
    "DedupThresholds",
    "LLMConsolidator",
    "Related",
    "RuleConsolidator",
    "SurvivalScore",
    "SurvivalWeights",
    "choose_evictions",
    "decayed_importance",
    "is_near_duplicate",
    "is_valid_at",
    "merge_into",
    "merge_sources",
    "normalised_hash",
    "supersede",
    "survival",
]
