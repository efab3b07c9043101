"""Typed records at the bottom of the house: what crosses the store seam and the keys derived from a memory.

Nothing here imports a domain package (``enrich``, ``graph``, ``structured``, ``retrieval``, ``lifecycle``): the
store and the domain both stand on these modules.
"""
