"""BM25 over one user's memories, the rule both SQL stores share: the user's read model (``memlane.store.hot``)
answers when the filters are none or "current only"; any other filter, or no model at hand, reads the backend's
own text index (FTS5, ``tsvector``), which each backend queries in its own way.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import ClassVar, Generic, TypeVar

from memlane.models import Filters
from memlane.store.hot.cache import HotScopes
from memlane.store.sql.filters import FilterSQL

H = TypeVar("H", bound=HotScopes)


class SQLTextIndex(Generic[H]):
    """``TextIndex``: the read model first, else the backend's ``_text_search_sql`` and ``_text_scores_sql``."""

    _hot: H
    _filters: ClassVar[FilterSQL]

    def _text_search_sql(
        self, user_id: str, terms: Sequence[str], limit: int | None, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        raise NotImplementedError

    def _text_scores_sql(
        self, user_id: str, terms: Sequence[str], memory_ids: Sequence[str], filters: Filters
    ) -> dict[str, float]:
        raise NotImplementedError

    def text_search(
        self, user_id: str, terms: Sequence[str], limit: int | None, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        if not terms or (limit is not None and limit <= 0):
            return []
        if self._filters.is_empty(filters) or self._filters.only_current(filters):
            with self._hot.using(user_id) as model:
                if model is not None:
                    cap = len(model) if limit is None else int(limit)
                    return model.text_search(terms, cap, current_only=not self._filters.is_empty(filters))
        return self._text_search_sql(user_id, terms, limit, filters)

    def text_scores(
        self, user_id: str, terms: Sequence[str], memory_ids: Sequence[str], filters: Filters
    ) -> dict[str, float]:
        if not terms or not memory_ids:
            return {}
        if self._filters.is_empty(filters) or self._filters.only_current(filters):
            with self._hot.using(user_id) as model:
                if model is not None:
                    ids = model.current(memory_ids) if self._filters.only_current(filters) else memory_ids
                    return model.text_scores(terms, [m for m in memory_ids if m in ids])
        return self._text_scores_sql(user_id, terms, memory_ids, filters)
