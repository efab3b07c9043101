"""Structured questions (counting, existence, lists, first/last, order, time ranges) as typed, parameterised queries."""

from memlane.structured.query import Match, Op, StructuredQuery, Unit
from memlane.structured.run import StructuredResult, run_query

__all__ = ["Match", "Op", "StructuredQuery", "StructuredResult", "Unit", "run_query"]
