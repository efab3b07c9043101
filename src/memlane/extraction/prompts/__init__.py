"""Every prompt memlane sends, each a module pairing its template with the pydantic model of its output."""

from memlane.extraction.prompts import consolidate, extract
from memlane.extraction.prompts.base import Output, Prompt

__all__ = ["Output", "Prompt", "consolidate", "extract"]
