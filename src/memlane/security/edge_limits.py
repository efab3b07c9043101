"""The library's limits as pydantic annotations for the JSON edges (REST, MCP): a field names the limit it keeps, and
its schema and its check take that limit from the ``Limits`` in effect, so raising or lowering ``max_text_chars`` or
``max_id_chars`` in the ``Config`` moves every edge with the library.

An edge states the limits of its store with ``limits_in_effect`` around the work that reads them: the REST server
around each request and around building its OpenAPI document, the MCP server around building its tools' schemas.
Where no limits are in effect (a model used outside an edge) a schema states the default limits and the check is
left to the library, which checks every value it is given anyway.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticKnownError, core_schema

from memlane.security.validation import DEFAULT_LIMITS, Limits

#: The JSON schema keyword that states a bound, by the JSON type bounded.
_KEYS = {"string": "maxLength", "array": "maxItems", "integer": "maximum"}
_IN_EFFECT: ContextVar[Limits | None] = ContextVar("memlane_limits_in_effect", default=None)


@contextmanager
def limits_in_effect(limits: Limits) -> Iterator[Limits]:
    """Within the block, every ``Bound`` field is documented and checked with ``limits``."""
    token = _IN_EFFECT.set(limits)
    try:
        yield limits
    finally:
        _IN_EFFECT.reset(token)


def current_limits() -> Limits:
    """The limits in effect, else the library's defaults."""
    return _IN_EFFECT.get() or DEFAULT_LIMITS


@dataclass(frozen=True)
class Bound:
    """At most ``Limits.<limit>`` in effect: the characters of a string, the items of a list, or an integer's value.

    Use it in ``Annotated`` (``Annotated[str, Field(min_length=1), Bound("text_chars")]``). A value over the limit is
    refused as pydantic refuses one over a fixed ``max_length`` or ``le`` (same error type and message), so the edge's
    error shape does not change with the limit.
    """

    limit: str

    def __post_init__(self) -> None:
        if not isinstance(getattr(DEFAULT_LIMITS, self.limit, None), int):
            raise ValueError(f"Limits has no integer limit {self.limit!r}")

    def value(self, limits: Limits | None = None) -> int:
        """The bound under ``limits`` (default: the limits in effect)."""
        return int(getattr(limits or current_limits(), self.limit))

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        target = handler.resolve_ref_schema(out)
        for part in target.get("anyOf", [target]):  # an optional field: the bound is the non-null member's
            key = _KEYS.get(str(part.get("type")))
            if key is not None:
                part[key] = self.value()
        return out

    def _check(self, value: Any) -> Any:
        limits = _IN_EFFECT.get()
        if limits is None:
            return value  # no edge states its limits here: the library checks the value
        bound = self.value(limits)
        if isinstance(value, int) and not isinstance(value, bool):
            if value > bound:
                raise PydanticKnownError("less_than_equal", {"le": bound})
        elif isinstance(value, str):
            if len(value) > bound:
                raise PydanticKnownError("string_too_long", {"max_length": bound})
        elif isinstance(value, list) and len(value) > bound:
            raise PydanticKnownError(
                "too_long", {"field_type": "List", "max_length": bound, "actual_length": len(value)}
            )
        return value
