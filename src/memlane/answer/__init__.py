"""Answering from memory: ``ask`` (routing, structured queries, checked citations) and ``context`` assembly."""

from memlane.answer.ask import Answer
from memlane.answer.context import Context
from memlane.answer.fence import fence

__all__ = ["Answer", "Context", "fence"]
