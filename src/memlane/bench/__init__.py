"""Benchmarks: datasets, metrics and the harnesses behind ``memlane bench``."""
