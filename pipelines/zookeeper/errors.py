"""Typed errors of the ZooKeeper readers. Every one names the file, the byte position and
the reason in its one-line message; they are :class:`pipelines.errors.InputError` so the CLI
exits 1 with that line."""

from __future__ import annotations

from pipelines.errors import InputError


class ZkFormatError(InputError):
    """A ZooKeeper file that cannot be read past ``offset``."""

    def __init__(self, file: str, offset: int, reason: str):
        self.file, self.offset, self.reason = str(file), int(offset), reason
        super().__init__(f"{self.file}:{self.offset}: {reason}")

    @property
    def location(self) -> str:
        return f"{self.file}:{self.offset}"


class BadMagic(ZkFormatError):
    """Not a snapshot / transaction log (wrong magic or version)."""


class Truncated(ZkFormatError):
    """The file ends inside a structure."""


class UnreasonableLength(ZkFormatError):
    """A length prefix that cannot be right (negative, or far beyond the file)."""


class SealMismatch(ZkFormatError):
    """A snapshot's Adler32 seal does not match its bytes."""


class DigestMismatch(ZkFormatError):
    """The recomputed 3.6+ tree digest differs from the stored one."""


class CrcMismatch(ZkFormatError):
    """A transaction-log entry whose Adler32 does not match its bytes."""

