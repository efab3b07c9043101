"""Seal and unseal the originals of redacted text with a Fernet key kept in its own file (``cryptography``).

The store holds only ciphertext, so a copy of the database (a backup, an export, a stolen file) reveals no
redacted PII without the key file; deleting a memory or erasing a user deletes the ciphertext in the same
transaction. The key file is created on first use with mode 0600, in the data dir unless configured elsewhere
(keep it off the database's volume for a stronger split).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.errors import ConfigError, MissingDependencyError, ValidationError

if TYPE_CHECKING:
    from cryptography.fernet import Fernet


def _fernet_class() -> type[Fernet]:
    try:
        from cryptography.fernet import Fernet
    except ImportError as exc:
        raise MissingDependencyError("PII redaction", "pii") from exc
    return Fernet


class Vault:
    """Encrypts originals with the key at ``key_path`` (created with mode 0600 when absent)."""

    def __init__(self, key_path: Path) -> None:
        fernet = _fernet_class()
        self.key_path = key_path
        self._fernet = fernet(self._key(key_path, fernet))

    @staticmethod
    def _key(path: Path, fernet: type[Fernet]) -> bytes:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            key = fernet.generate_key()
            with contextlib.suppress(FileExistsError):  # another process made it first: read theirs
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(key)
        try:
            key = path.read_bytes().strip()
            fernet(key)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot use the PII key file {path}: {exc}") from exc
        return key

    def seal(self, text: str) -> bytes:
        """``text`` encrypted (and authenticated)."""
        return self._fernet.encrypt(text.encode("utf-8"))

    def unseal(self, sealed: bytes) -> str:
        """The text ``seal`` encrypted; a ``ValidationError`` when this key did not seal it."""
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(sealed).decode("utf-8")
        except InvalidToken:
            raise ValidationError(
                f"the sealed original cannot be opened with the key in {self.key_path} (another key sealed it)"
            ) from None
