"""Typed decode errors of ``__consumer_offsets`` segments. Each carries the reason that ends
up in ``raw/quarantine`` (the location is added by whoever knows the file and position)."""

from __future__ import annotations


class DecodeError(Exception):
    """A part of a segment that cannot be decoded (``str(err)`` is the quarantine reason)."""


class FramingError(DecodeError):
    """The batch framing itself is broken (length, magic, CRC, cut off)."""


class TruncatedBatch(FramingError):
    pass


class ImpossibleLength(FramingError):
    pass


class UnknownMagic(FramingError):
    pass


class CrcMismatch(FramingError):
    pass


class OffsetOutOfRange(FramingError):
    """Offsets outside the segment's range (a base offset is outside Kafka's CRC)."""


class OffsetOutOfOrder(FramingError):
    """Offsets that do not follow those of the batches before and after."""


class CorruptRecords(DecodeError):
    """A batch whose framing and CRC are fine but whose records do not parse."""


class OffsetMismatch(CorruptRecords):
    """Record offsets that disagree with their batch's."""


class RecordCountMismatch(CorruptRecords):
    """A magic-2 batch whose recordCount its offsets or its bytes cannot hold."""


class UnsupportedCodec(DecodeError):
    pass


class DecompressionBomb(DecodeError):
    """A compressed batch that decompresses past its size limit."""


class UndecodableKey(DecodeError):
    pass


class UndecodableValue(DecodeError):
    pass
