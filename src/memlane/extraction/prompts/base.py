"""``Prompt``: a named, versioned prompt paired with the pydantic model its reply must validate against."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

Output = TypeVar("Output", bound=BaseModel)


@dataclass(frozen=True)
class Prompt(Generic[Output]):
    """A named, versioned prompt and the model its reply must validate against."""

    name: str
    version: int
    system: str
    output: type[Output]

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the output, as sent for structured output."""
        return self.output.model_json_schema()
