"""The leave-one-source-out table's ceiling: the best recall any threshold could reach on a held-out source within
its false-positive budget, read off that source (a bound the harness reports beside the honest estimate)."""

from __future__ import annotations

import math

import numpy as np

from memlane.bench.injection_loso import _result, recall_ceiling


def test_the_ceiling_flags_at_most_the_budget_of_benign_scores() -> None:
    benign = np.linspace(0.0, 0.99, 100)  # 100 benign: 3 may be flagged (0.97, 0.98, 0.99)
    attacks = np.array([0.995, 0.975, 0.965, 0.5])
    scores = np.concatenate([attacks, benign])
    labels = np.array([1] * 4 + [0] * 100)
    # above the fourth-highest benign score (0.96): three of the four attacks
    assert recall_ceiling(scores, labels) == 0.75
    # a stricter budget (1 benign of 100) leaves only what is above 0.98
    assert recall_ceiling(scores, labels, fpr=0.01) == 0.25


def test_tied_scores_are_flagged_together() -> None:
    scores = np.array([0.9, 0.9, 0.9, 0.9])
    labels = np.array([1, 0, 0, 0])
    # a threshold at 0.9 flags every benign text, so within a budget of none no attack is caught
    assert recall_ceiling(scores, labels, fpr=0.0) == 0.0
    assert recall_ceiling(scores, labels, fpr=1.0) == 1.0


def test_a_source_of_one_class_has_no_ceiling_and_the_row_carries_it() -> None:
    assert math.isnan(recall_ceiling(np.array([0.1, 0.2]), np.array([0, 0])))
    scores = np.array([0.95, 0.2, 0.1, 0.3])
    row = _result("x", "n-gram", scores, np.array([1, 1, 0, 0]), threshold=0.5)
    assert (row.caught, row.flagged) == (1, 0) and row.recall == 0.5
    assert row.ceiling == 0.5  # budget floor(0.03 * 2) = 0 benign: only what is above 0.3
