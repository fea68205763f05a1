"""Every real record pair of tests/fixtures/real/consumer_offsets_records decodes to
exactly the values of its ``.ts_int.fmt`` file (parsed here, not hand-copied).

The .fmt files print a null string as "" and absent/none numbers as -1; the warehouse keeps
nulls (leader_epoch -1 and expire_timestamp -1 are null there)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from pipelines.kafka.records import CONSUMER_ASSIGNMENT, CONSUMER_SUBSCRIPTION, decode
from pipelines.kafka.segment import decode_segment
from testkit.segments import batch, write_segment

TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\d+)|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<p>[{}\[\]:,]))'
)


def parse_fmt(text: str):
    """Rust ``{:#?}`` output -> dicts / lists / str / int / bool."""
    tokens = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        assert m, f"cannot tokenize at {text[pos:pos + 20]!r}"
        pos = m.end()
        kind = m.lastgroup
        tokens.append((kind, m.group(kind)))
    it = iter(tokens + [("end", None)])
    tok = [next(it)]

    def take():
        t = tok[0]
        tok[0] = next(it)
        return t

    def value():
        kind, v = take()
        if kind == "str":
            return v[1:-1].encode().decode("unicode_escape")
        if kind == "num":
            return int(v)
        if kind == "word":
            if v in ("true", "false"):
                return v == "true"
            if tok[0] == ("p", "{"):
                take()
                out = {}
                while tok[0] != ("p", "}"):
                    _, name = take()
                    assert take() == ("p", ":")
                    out[name] = value()
                    if tok[0] == ("p", ","):
                        take()
                take()
                return out
            return v
        if (kind, v) == ("p", "["):
            items = []
            while tok[0] != ("p", "]"):
                items.append(value())
                if tok[0] == ("p", ","):
                    take()
            take()
            return items
        raise AssertionError(f"unexpected {kind} {v}")

    return value()


def _cases(real_fixtures):
    d = real_fixtures / "consumer_offsets_records"
    return sorted(p.name[: -len(".ts_int.fmt")] for p in d.glob("*.ts_int.fmt"))


def _ts(ms):
    return None if ms is None or ms < 0 else datetime.fromtimestamp(ms / 1000, UTC)


def _decode_pair(tmp_path, key: bytes, value: bytes | None):
    seg = tmp_path / "__consumer_offsets-7" / "00000000000000000000.log"
    write_segment(seg, [batch([(key, value)], base_offset=42, timestamp_ms=1)])
    return decode_segment(seg, 7)


def test_fixture_set_is_complete(real_fixtures):
    names = _cases(real_fixtures)
    assert len([n for n in names if n.startswith("offset_commit")]) == 5
    assert len([n for n in names if n.startswith("group_metadata")]) == 5


@pytest.mark.parametrize(
    "name", [f"offset_commit_{i:02d}" for i in range(1, 6)] + [f"group_metadata_{i:02d}" for i in range(1, 6)]
)
def test_real_record_decodes_to_expected_values(real_fixtures, tmp_path, name):
    d = real_fixtures / "consumer_offsets_records"
    expected = parse_fmt((d / f"{name}.ts_int.fmt").read_text())
    key = (d / f"{name}.key").read_bytes()
    payload = d / f"{name}.payload"
    value = payload.read_bytes() if payload.exists() else None
    res = _decode_pair(tmp_path, key, value)
    assert res.tables["raw/quarantine"].num_rows == 0

    if name.startswith("offset_commit"):
        e = expected["OffsetCommit"] if "OffsetCommit" in expected else expected
        rows = res.tables["raw/offset_commits"].to_pylist()
        assert len(rows) == 1
        r = rows[0]
        assert r["key_version"] == e["message_version"]
        assert (r["group_id"], r["topic"], r["partition"]) == (e["group"], e["topic"], e["partition"])
        assert r["is_tombstone"] == e["is_tombstone"]
        assert r["value_version"] == e["schema_version"]
        assert r["committed_offset"] == e["offset"]
        assert r["leader_epoch"] == (None if e["leader_epoch"] < 0 else e["leader_epoch"])
        assert r["metadata"] == e["metadata"]
        assert r["commit_timestamp"] == _ts(e["commit_timestamp"])
        assert r["expire_timestamp"] == _ts(e["expire_timestamp"])
        assert (r["offsets_partition"], r["log_offset"], r["is_transactional"], r["txn_state"]) == (7, 42, False, None)
        return

    e = expected
    gm = res.tables["raw/group_metadata"].to_pylist()
    assert len(gm) == 1
    g = gm[0]
    assert key[:2] == e["message_version"].to_bytes(2, "big")
    assert g["group_id"] == e["group"]
    assert g["is_tombstone"] == e["is_tombstone"]
    assert g["value_version"] == e["schema_version"]
    assert g["protocol_type"] == e["protocol_type"]
    assert g["generation"] == e["generation"]
    assert (g["protocol"] or "") == e["protocol"]
    assert (g["leader"] or "") == e["leader"]
    assert g["state_timestamp"] == _ts(e["current_state_timestamp"])

    members = res.tables["raw/group_members"].to_pylist()
    assert [m["member_id"] for m in members] == [m["id"] for m in e["members"]]
    expected_assignments = []
    for m, em in zip(members, e["members"], strict=True):
        assert (m["group_instance_id"] or "") == em["group_instance_id"]
        assert m["client_id"] == em["client_id"]
        assert m["client_host"] == em["client_host"]
        assert m["rebalance_timeout_ms"] == em["rebalance_timeout"]
        assert m["session_timeout_ms"] == em["session_timeout"]
        assert m["subscribed_topics"] == em["subscription"]["subscribed_topics"]
        assert (m["generation"], m["offsets_partition"], m["log_offset"]) == (e["generation"], 7, 42)
        for tp in em["assignment"]["assigned_topic_partitions"]:
            expected_assignments += [(em["id"], tp["topic"], p) for p in tp["partitions"]]
    got = [(a["member_id"], a["topic"], a["partition"]) for a in res.tables["raw/group_assignments"].to_pylist()]
    assert got == expected_assignments


@pytest.mark.parametrize("name", [f"group_metadata_{i:02d}" for i in range(1, 6)])
def test_real_consumer_protocol_fields(real_fixtures, name):
    """The embedded subscription/assignment decode to every field the .fmt prints."""
    from pipelines.kafka.records import GROUP_METADATA_VALUE

    d = real_fixtures / "consumer_offsets_records"
    expected = parse_fmt((d / f"{name}.ts_int.fmt").read_text())
    _, value = decode(GROUP_METADATA_VALUE, (d / f"{name}.payload").read_bytes())
    for m, em in zip(value["members"], expected["members"], strict=True):
        sv, sub = decode(CONSUMER_SUBSCRIPTION, m["subscription"])
        es = em["subscription"]
        assert sv == es["schema_version"]
        assert sub["topics"] == es["subscribed_topics"]
        assert list(sub["user_data"] or b"") == es["user_data"]
        assert [(tp["topic"], tp["partitions"]) for tp in sub["owned_partitions"] or []] == [
            (tp["topic"], tp["partitions"]) for tp in es["owned_topic_partitions"]
        ]
        assert sub["generation_id"] == es["generation_id"]
        assert (sub["rack_id"] or "") == es["rack_id"]
        av, asg = decode(CONSUMER_ASSIGNMENT, m["assignment"])
        ea = em["assignment"]
        assert av == ea["schema_version"]
        assert list(asg["user_data"] or b"") == ea["user_data"]
