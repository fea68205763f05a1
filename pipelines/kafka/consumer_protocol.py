"""The embedded ConsumerProtocol of classic groups with protocol_type 'consumer': the
subscription and assignment bytes of each member (field tables in ``records.py``).

A version newer than 3 is read as its v3 prefix (newer versions keep older fields in place),
so a member is never lost to a new client."""

from __future__ import annotations

from pipelines.kafka.errors import DecodeError
from pipelines.kafka.records import CONSUMER_ASSIGNMENT, CONSUMER_SUBSCRIPTION, decode


def subscribed_topics(data: bytes | None) -> list[str]:
    """Topics of a Subscription (empty bytes or null: no topics). Raises DecodeError."""
    if not data:
        return []
    _, sub = decode(CONSUMER_SUBSCRIPTION, data)
    if sub["topics"] is None:
        return []
    if any(t is None for t in sub["topics"]):
        raise DecodeError("null topic name in subscription")
    return sub["topics"]


def assigned_partitions(data: bytes | None) -> list[tuple[str, int]]:
    """(topic, partition) pairs of an Assignment, in encoded order. Raises DecodeError."""
    if not data:
        return []
    _, asg = decode(CONSUMER_ASSIGNMENT, data)
    out = []
    for tp in asg["assigned_partitions"] or []:
        if tp["topic"] is None:
            raise DecodeError("null topic name in assignment")
        out.extend((tp["topic"], p) for p in tp["partitions"] or [])
    return out
