"""KIP-848 group records (key types 3-8, 16), share/streams records and v4 offset commits with
a TopicId tag: encoded with kio primitives (testkit.kip848) in kafka-python v2 batches, decoded
by the offsets extractor. Expected rows come from what each test wrote."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime

from pipelines.kafka.offsets import decode_scope
from pipelines.kafka.paths import offsets_segments
from testkit import kip848 as G
from testkit.segments import (
    batch,
    offset_commit_key,
    offset_commit_value,
    segment_name,
    write_segment,
)

T0 = 1_700_000_000_000
TOPIC_A = uuid.UUID("8f1c2f39-36b4-4d4f-9a4e-1b2b0c2f7d11")
TOPIC_B = uuid.UUID("00000000-0000-0000-0000-0000000000ff")
PLACE = ("is_tombstone", "value_version", "offsets_partition", "log_offset")


def tid(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(), computed here: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def _decode(tmp_path, records, partition=3):
    write_segment(
        tmp_path / f"__consumer_offsets-{partition}" / segment_name(0), [batch(records, base_offset=0, timestamp_ms=T0)]
    )
    tables, _ = decode_scope(offsets_segments([tmp_path]))
    return tables


def _rows(table, *drop):
    """Rows without segment_file and batch_offset (one batch of records from offset 0 in these
    tests: test_each_record_keeps_its_batch_time and _offset check both)."""
    rows = table.to_pylist()
    for r in rows:
        assert r.pop("segment_file").endswith(segment_name(0))
        r.pop("batch_offset")
        for d in drop:
            r.pop(d)
    return rows


def _place(offset, tombstone=False, at_ms=T0):
    return dict(
        is_tombstone=tombstone,
        value_version=None if tombstone else 0,
        offsets_partition=3,
        log_offset=offset,
        batch_timestamp=datetime.fromtimestamp(at_ms / 1000, UTC),
    )


def test_each_consumer_group_record_type_v0_and_its_tombstone(tmp_path):
    records = [
        G.group_metadata("g", 7),
        G.partition_metadata("g", [(TOPIC_A, "orders", 3), (TOPIC_B, "audit", 1)], racks={0: ["r1", "r2"]}),
        G.member_metadata(
            "g",
            "m1",
            instance_id="i-1",
            rack_id="r1",
            client_id="c1",
            client_host="/10.0.0.1",
            topics=["orders", "audit"],
            regex=None,
            rebalance_timeout_ms=45000,
            assignor="range",
        ),
        G.member_metadata(
            "g",
            "m2",
            topics=[],
            regex="ord.*",
            assignor=None,
            classic=(10000, [("range", b"\x00\x01"), ("cooperative-sticky", b"")]),
        ),
        G.target_metadata("g", 6),
        G.target_member("g", "m1", {TOPIC_A: [0, 1], TOPIC_B: [0]}),
        G.target_member("g", "m2", {}),
        G.current_member(
            "g",
            "m1",
            epoch=6,
            previous_epoch=5,
            state="UNRELEASED_PARTITIONS",
            assigned={TOPIC_A: [0]},
            pending={TOPIC_B: [0]},
        ),
        G.regular_expression("g", "ord.*", ["orders"], version=4, timestamp_ms=T0),
        # tombstones of each (log offsets 9-15)
        G.group_metadata("g", None),
        G.partition_metadata("g", None),
        G.member_metadata("g", "m2", tombstone=True),
        G.target_metadata("g", None),
        G.target_member("g", "m2", None),
        G.current_member("g", "m1", tombstone=True),
        G.regular_expression("g", "ord.*", None),
    ]
    t = _decode(tmp_path, records)
    assert t["raw/quarantine"].num_rows == 0
    assert t["raw/coordinator_records"].num_rows == 0
    assert _rows(t["raw/consumer_group_metadata"]) == [
        dict(group_id="g", group_epoch=7, **_place(0)),
        dict(group_id="g", group_epoch=None, **_place(9, True)),
    ]
    assert _rows(t["raw/consumer_group_partition_metadata"]) == [
        dict(group_id="g", topic_id=tid(TOPIC_A), topic="orders", num_partitions=3, **_place(1)),
        dict(group_id="g", topic_id=tid(TOPIC_B), topic="audit", num_partitions=1, **_place(1)),
        dict(group_id="g", topic_id=None, topic=None, num_partitions=None, **_place(10, True)),
    ]
    classic = {
        "sessionTimeoutMs": 10000,
        "supportedProtocols": [
            {"name": "range", "metadata": base64.b64encode(b"\x00\x01").decode()},
            {"name": "cooperative-sticky", "metadata": ""},
        ],
    }
    none = dict.fromkeys(
        (
            "instance_id",
            "rack_id",
            "client_id",
            "client_host",
            "subscribed_topics",
            "subscribed_topic_regex",
            "rebalance_timeout_ms",
            "server_assignor",
            "classic_member_metadata",
        )
    )
    assert _rows(t["raw/consumer_group_members"]) == [
        dict(
            group_id="g",
            member_id="m1",
            instance_id="i-1",
            rack_id="r1",
            client_id="c1",
            client_host="/10.0.0.1",
            subscribed_topics=["orders", "audit"],
            subscribed_topic_regex=None,
            rebalance_timeout_ms=45000,
            server_assignor="range",
            classic_member_metadata=None,
            **_place(2),
        ),
        dict(
            group_id="g",
            member_id="m2",
            instance_id=None,
            rack_id=None,
            client_id="client",
            client_host="/127.0.0.1",
            subscribed_topics=[],
            subscribed_topic_regex="ord.*",
            rebalance_timeout_ms=300000,
            server_assignor=None,
            classic_member_metadata=json.dumps(classic, sort_keys=True),
            **_place(3),
        ),
        dict(group_id="g", member_id="m2", **none, **_place(11, True)),
    ]
    assert _rows(t["raw/consumer_group_target_metadata"]) == [
        dict(group_id="g", assignment_epoch=6, **_place(4)),
        dict(group_id="g", assignment_epoch=None, **_place(12, True)),
    ]
    assert _rows(t["raw/consumer_group_target_assignments"]) == [
        dict(
            group_id="g",
            member_id="m1",
            topic_partitions=[
                dict(topic_id=tid(TOPIC_A), partitions=[0, 1]),
                dict(topic_id=tid(TOPIC_B), partitions=[0]),
            ],
            **_place(5),
        ),
        dict(group_id="g", member_id="m2", topic_partitions=[], **_place(6)),
        dict(group_id="g", member_id="m2", topic_partitions=None, **_place(13, True)),
    ]
    assert _rows(t["raw/consumer_group_current_assignments"]) == [
        dict(
            group_id="g",
            member_id="m1",
            member_epoch=6,
            previous_member_epoch=5,
            state="UNRELEASED_PARTITIONS",
            assigned_partitions=[dict(topic_id=tid(TOPIC_A), partitions=[0])],
            partitions_pending_revocation=[dict(topic_id=tid(TOPIC_B), partitions=[0])],
            **_place(7),
        ),
        dict(
            group_id="g",
            member_id="m1",
            member_epoch=None,
            previous_member_epoch=None,
            state=None,
            assigned_partitions=None,
            partitions_pending_revocation=None,
            **_place(14, True),
        ),
    ]
    assert _rows(t["raw/consumer_group_regexes"]) == [
        dict(
            group_id="g",
            regular_expression="ord.*",
            topics=["orders"],
            regex_version=4,
            resolved_at=datetime.fromtimestamp(T0 / 1000, UTC),
            **_place(8),
        ),
        dict(
            group_id="g",
            regular_expression="ord.*",
            topics=None,
            regex_version=None,
            resolved_at=None,
            **_place(15, True),
        ),
    ]


def test_share_and_streams_records_are_decoded_generically(tmp_path):
    streams_body = b"\x00\x00\x00\x05\x00"
    records = [
        G.share_group_metadata("s", 3),
        G.share_member_metadata("s", "sm1", ["orders"], rack_id="r9"),
        G.streams_record(19, "st", "stm1", streams_body),
        G.streams_record(17, "st", None, streams_body),
        (G.key(14, "s", "sm1"), None),
    ]
    t = _decode(tmp_path, records)
    assert t["raw/quarantine"].num_rows == 0
    got = _rows(t["raw/group_coordinator_records"])
    fields = [
        {"epoch": 3},
        {"rackId": "r9", "clientId": "client", "clientHost": "/127.0.0.1", "subscribedTopicNames": ["orders"]},
    ]
    assert got == [
        dict(
            key_type=11,
            record_type="ShareGroupMetadata",
            group_id="s",
            member_id=None,
            fields=json.dumps(fields[0], sort_keys=True),
            value=None,
            **_place(0),
        ),
        dict(
            key_type=10,
            record_type="ShareGroupMemberMetadata",
            group_id="s",
            member_id="sm1",
            fields=json.dumps(fields[1], sort_keys=True),
            value=None,
            **_place(1),
        ),
        dict(
            key_type=19,
            record_type="StreamsGroupMemberMetadata",
            group_id="st",
            member_id="stm1",
            fields=None,
            value=records[2][1],
            **_place(2),
        ),
        dict(
            key_type=17,
            record_type="StreamsGroupMetadata",
            group_id="st",
            member_id=None,
            fields=None,
            value=records[3][1],
            **_place(3),
        ),
        dict(
            key_type=14,
            record_type="ShareGroupCurrentMemberAssignment",
            group_id="s",
            member_id="sm1",
            fields=None,
            value=None,
            **_place(4, True),
        ),
    ]


def _generic(key_type, record_type, group, member, place, *, fields=None, value=None):
    """A row of raw/group_coordinator_records."""
    return dict(
        key_type=key_type,
        record_type=record_type,
        group_id=group,
        member_id=member,
        fields=fields,
        value=value,
        **place,
    )


def _tasks(tasks: dict[str, list[int]], epochs: bool = False) -> list[dict]:
    return [{"subtopologyId": s, "partitions": p, **({"assignmentEpochs": None} if epochs else {})}
            for s, p in tasks.items()]


def _pairs(pairs: dict[str, str], k="key", v="value") -> list[dict]:
    return [{k: a, v: b} for a, b in pairs.items()]


def test_each_streams_record_type_v0_is_decoded_to_its_fields(tmp_path):
    """Every streams group value (17-24) v0, with nested arrays/structs, a nullable struct (both
    ways) and a tagged field (set and absent): the decoded JSON fields are what the builder got;
    an unknown value version and a v0 value that does not decode keep their bytes."""
    configs = {"num.standby.replicas": "1", "acceptable.recovery.lag": "10000"}
    racks = {0: ["r1", "r2"], 2: []}
    active, standby, warmup = {"0": [0, 2], "1": [1]}, {"0": [1]}, {}
    pend = ({"1": [0]}, {}, {"0": [3, 4]})
    changelog = ("app-store-changelog", 0, 3, {"cleanup.policy": "compact"})
    repart = ("app-rekey-repartition", 6, -1, {})
    sub0 = dict(
        id="0",
        sources=["orders"],
        regexes=[],
        changelogs=[changelog],
        sinks=["app-rekey-repartition"],
        repartition_sources=[],
        copartition=[],
    )
    sub1 = dict(
        id="1",
        sources=[],
        regexes=["pay.*"],
        changelogs=[],
        sinks=[],
        repartition_sources=[repart],
        copartition=[([0], [], [0]), ([], [0, 1], [])],
    )
    member = dict(
        instance_id=None,
        rack_id="r1",
        client_id="app-1-StreamThread-1",
        client_host="/10.0.0.7",
        rebalance_timeout_ms=300000,
        topology_epoch=2,
        process_id="b3c0f7e2",
    )
    records = [
        G.streams_group_metadata("st", 9, -7_208_812_399_128_491_137, configs, validated_topology_epoch=2),
        G.streams_group_metadata("st", 10, 42, {}),
        G.streams_partition_metadata("st", [(TOPIC_A, "orders", 3, racks), (TOPIC_B, "payments", 1, {})]),
        G.streams_member_metadata(
            "st", "m1", **member, user_endpoint=("iq.local", 65535), client_tags={"zone": "eu-1a"}
        ),
        G.streams_member_metadata("st", "m2", **member, user_endpoint=None, client_tags={}),
        G.streams_target_metadata("st", 9),
        G.streams_target_member("st", "m1", active, standby, warmup),
        G.streams_current_member(
            "st", "m1", epoch=9, previous_epoch=8, state=1, tasks=(active, standby, warmup), pending=pend
        ),
        G.streams_topology("st", 2, [sub0, sub1]),
        G.streams_resolved_topic_ids("st", 9, {"0": [TOPIC_A], "1": [TOPIC_B, TOPIC_A]}),
        G.streams_record(20, "st", None, b"\x00\x00\x00\x09\x00", version=1),  # a version no schema knows
        G.streams_record(21, "st", "m1", b"\x05"),  # v0 that does not decode
        (G.key(22, "st", "m2"), None),
    ]

    def info(t):
        return {"name": t[0], "partitions": t[1], "replicationFactor": t[2], "topicConfigs": _pairs(t[3])}

    def sub(s):
        return {
            "subtopologyId": s["id"],
            "sourceTopics": s["sources"],
            "sourceTopicRegex": s["regexes"],
            "stateChangelogTopics": [info(t) for t in s["changelogs"]],
            "repartitionSinkTopics": s["sinks"],
            "repartitionSourceTopics": [info(t) for t in s["repartition_sources"]],
            "copartitionGroups": [
                {"sourceTopics": a, "sourceTopicRegex": b, "repartitionSourceTopics": c} for a, b, c in s["copartition"]
            ],
        }

    def member_fields(endpoint, tags):
        return {
            "instanceId": member["instance_id"],
            "rackId": member["rack_id"],
            "clientId": member["client_id"],
            "clientHost": member["client_host"],
            "rebalanceTimeoutMs": member["rebalance_timeout_ms"],
            "topologyEpoch": member["topology_epoch"],
            "processId": member["process_id"],
            "userEndpoint": endpoint,
            "clientTags": _pairs(tags),
        }

    expected = [
        (
            17,
            "StreamsGroupMetadata",
            None,
            {
                "epoch": 9,
                "metadataHash": -7_208_812_399_128_491_137,
                "validatedTopologyEpoch": 2,
                "assignmentConfigs": _pairs(configs),
            },
        ),
        (
            17,
            "StreamsGroupMetadata",
            None,
            {"epoch": 10, "metadataHash": 42, "validatedTopologyEpoch": -1, "assignmentConfigs": []},
        ),
        (
            18,
            "StreamsGroupPartitionMetadata",
            None,
            {
                "topics": [
                    {
                        "topicId": tid(u),
                        "topicName": n,
                        "numPartitions": k,
                        "partitionMetadata": [{"partition": p, "racks": r} for p, r in sorted(rk.items())],
                    }
                    for u, n, k, rk in [(TOPIC_A, "orders", 3, racks), (TOPIC_B, "payments", 1, {})]
                ]
            },
        ),
        (19, "StreamsGroupMemberMetadata", "m1", member_fields({"host": "iq.local", "port": 65535}, {"zone": "eu-1a"})),
        (19, "StreamsGroupMemberMetadata", "m2", member_fields(None, {})),
        (20, "StreamsGroupTargetAssignmentMetadata", None, {"assignmentEpoch": 9}),
        (
            21,
            "StreamsGroupTargetAssignmentMember",
            "m1",
            {"activeTasks": _tasks(active), "standbyTasks": _tasks(standby), "warmupTasks": _tasks(warmup)},
        ),
        (
            22,
            "StreamsGroupCurrentMemberAssignment",
            "m1",
            {
                "memberEpoch": 9,
                "previousMemberEpoch": 8,
                "state": 1,
                # Kafka 4.2's schema: a tagged AssignmentEpochs per task list, absent here (null)
                "activeTasks": _tasks(active, epochs=True),
                "standbyTasks": _tasks(standby, epochs=True),
                "warmupTasks": _tasks(warmup, epochs=True),
                "activeTasksPendingRevocation": _tasks(pend[0], epochs=True),
                "standbyTasksPendingRevocation": _tasks(pend[1], epochs=True),
                "warmupTasksPendingRevocation": _tasks(pend[2], epochs=True),
            },
        ),
        (23, "StreamsGroupTopology", None, {"epoch": 2, "subtopologies": [sub(sub0), sub(sub1)]}),
        (
            24,
            "StreamsGroupTargetAssignmentResolvedTopicIds",
            None,
            {
                "assignmentEpoch": 9,
                "resolvedTopicIdsBySubtopology": [
                    {"subtopologyId": "0", "topicIds": [tid(TOPIC_A)]},
                    {"subtopologyId": "1", "topicIds": [tid(TOPIC_B), tid(TOPIC_A)]},
                ],
            },
        ),
    ]
    t = _decode(tmp_path, records)
    assert t["raw/quarantine"].num_rows == 0
    got = _rows(t["raw/group_coordinator_records"])
    raw = [  # (record, key type, name, member, place): kept as bytes
        (10, 20, "StreamsGroupTargetAssignmentMetadata", None, {**_place(10), "value_version": 1}),
        (11, 21, "StreamsGroupTargetAssignmentMember", "m1", _place(11)),
        (12, 22, "StreamsGroupCurrentMemberAssignment", "m2", _place(12, True)),
    ]
    assert got == [
        _generic(k, name, "st", m, _place(i), fields=json.dumps(f, sort_keys=True))
        for i, (k, name, m, f) in enumerate(expected)
    ] + [_generic(k, name, "st", m, place, value=records[i][1]) for i, k, name, m, place in raw]


def test_each_record_keeps_its_batch_time_and_offset(tmp_path):
    """batch_timestamp is the first timestamp of the record's batch: three batches written at
    T0, T0 + 5 s and T0 + 9 s (the last with later record timestamps inside); batch_offset its
    base offset."""
    first = [G.group_metadata("g", 1), G.member_metadata("g", "m1", topics=["orders"])]
    second = [G.target_metadata("g", 1), G.target_member("g", "m1", {TOPIC_A: [0]}), G.group_metadata("g", 2)]
    third = [
        G.current_member("g", "m1", epoch=2, previous_epoch=1, assigned={TOPIC_A: [0]}),
        G.member_metadata("g", "m1", tombstone=True),
    ]
    batches = [
        batch(first, base_offset=0, timestamp_ms=T0),
        batch(second, base_offset=2, timestamp_ms=T0 + 5000),
        batch(third, base_offset=5, timestamp_ms=T0 + 9000, timestamps=[T0 + 9000, T0 + 9500]),
    ]
    write_segment(tmp_path / "__consumer_offsets-3" / segment_name(0), batches)
    t, _ = decode_scope(offsets_segments([tmp_path]))
    assert t["raw/quarantine"].num_rows == 0

    def at(table):
        return [(r["log_offset"], r["batch_timestamp"], r["batch_offset"]) for r in t[table].to_pylist()]

    def ts(ms):
        return datetime.fromtimestamp(ms / 1000, UTC)

    # batch_offset: the base offset of each record's batch (0, 2, 5)
    assert at("raw/consumer_group_metadata") == [(0, ts(T0), 0), (4, ts(T0 + 5000), 2)]
    assert at("raw/consumer_group_members") == [(1, ts(T0), 0), (6, ts(T0 + 9000), 5)]
    assert at("raw/consumer_group_target_metadata") == [(2, ts(T0 + 5000), 2)]
    assert at("raw/consumer_group_target_assignments") == [(3, ts(T0 + 5000), 2)]
    assert at("raw/consumer_group_current_assignments") == [(5, ts(T0 + 9000), 5)]


def test_unknown_versions_kept_raw_and_corrupt_records_quarantined(tmp_path):
    good_key, good_value = G.group_metadata("g", 1)
    records = [
        (good_key, G.value(b"\x00\x00\x00\x01\x00", version=1)),  # a version no schema here knows: raw
        (good_key, G.value(b"\x00\x00\x00")),  # cut short: quarantined
        (good_key, G.value(b"\x00\x00\x00\x01\x00\xff")),  # a byte left over: quarantined
        (G.key(5, "g"), G.member_metadata("g", "m")[1]),  # member key without its member id: quarantined
        (G.key(8, "g", "m") + b"!", G.current_member("g", "m")[1]),  # bytes after the key: quarantined
        (good_key, good_value),
    ]
    t = _decode(tmp_path, records)
    raw = t["raw/coordinator_records"].to_pylist()
    assert [(r["key_type"], r["group_id"], r["value"], r["log_offset"]) for r in raw] == [(3, "g", records[0][1], 0)]
    q = t["raw/quarantine"].to_pylist()
    assert len(q) == 4
    assert all(r["source"] == "offsets" and ":" in r["location"] for r in q)
    kinds = [r["reason"].split(":")[0] for r in q]
    assert kinds == ["UndecodableValue", "UndecodableValue", "UndecodableKey", "UndecodableKey"]
    assert [r["log_offset"] for r in _rows(t["raw/consumer_group_metadata"])] == [5]


def test_v4_offset_commit_keeps_its_topic_id(tmp_path):
    records = [
        (
            offset_commit_key("g", "orders", 0),
            offset_commit_value(10, commit_ts=T0, version=4, leader_epoch=2, tags={0: TOPIC_A.bytes}),
        ),
        (offset_commit_key("g", "orders", 1), offset_commit_value(11, commit_ts=T0, version=4)),
        (offset_commit_key("g", "audit", 0), offset_commit_value(12, commit_ts=T0, version=3)),
        (
            offset_commit_key("g", "audit", 1),
            offset_commit_value(13, commit_ts=T0, version=4, tags={0: TOPIC_B.bytes, 5: b"zz"}),
        ),
        (offset_commit_key("g", "audit", 2), offset_commit_value(14, commit_ts=T0, version=4, tags={0: b"short"})),
    ]
    t = _decode(tmp_path, records)
    got = [
        (r["topic"], r["partition"], r["committed_offset"], r["topic_id"]) for r in t["raw/offset_commits"].to_pylist()
    ]
    assert got == [
        ("orders", 0, 10, tid(TOPIC_A)),
        ("orders", 1, 11, None),
        ("audit", 0, 12, None),
        ("audit", 1, 13, tid(TOPIC_B)),
    ]
    q = t["raw/quarantine"].to_pylist()
    assert len(q) == 1 and "TopicId (tag 0) is not 16 bytes" in q[0]["reason"]
