"""What the library accepts where it is lenient about form: messages as text, records or mappings; filters as a
record or a mapping (each checked into its typed record by ``memlane.security.validation``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memlane.models import Filters, Message

MessagesInput = str | Message | Mapping[str, Any] | Sequence[str | Message | Mapping[str, Any]]
FiltersInput = Filters | Mapping[str, Any] | None
