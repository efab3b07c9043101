"""Adapters that plug memlane into agent frameworks, each behind its own extra (``memlane[langgraph]``, ...)."""
