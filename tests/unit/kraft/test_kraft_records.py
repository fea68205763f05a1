"""Each KRaft metadata record type and version, and each Raft control record: bytes made by the
independent encoder (kio primitives, structs by hand) or written out by hand, decoded by the
one table-driven decoder; expected fields come from what the test encoded."""

from __future__ import annotations

import base64
import json
import struct
import uuid

import pytest

from pipelines.kraft.decode import BadMetadataRecord, decode_control, decode_metadata
from testkit import kraft as B

T1, T2 = B.topic_uuid(1), B.topic_uuid(2)
D1, D2 = uuid.UUID(int=77), uuid.UUID(int=78)
U = B.uuid_text
ZERO = U(uuid.UUID(int=0))


def _broker(version, **extra):
    ep = [{"name": "PLAINTEXT", "host": "h1", "port": 9092, "securityProtocol": 0}]
    feats = [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 25}]
    out = {"brokerId": 4, "isMigratingZkBroker": False, "incarnationId": U(uuid.UUID(int=5)), "brokerEpoch": 33,
           "endPoints": ep, "features": feats, "rack": "rack-a", "fenced": False, "inControlledShutdown": False,
           "logDirs": [], "cordonedLogDirs": None}  # v4's tagged field, null before (its default)
    return {**out, **extra}


def _partition(version, **extra):
    out = {"partitionId": 3, "topicId": U(T1), "replicas": [1, 2, 3], "isr": [1, 2], "removingReplicas": [],
           "addingReplicas": [], "leader": 2, "leaderRecoveryState": 0, "leaderEpoch": 7, "partitionEpoch": 9,
           "directories": [], "eligibleLeaderReplicas": None, "lastKnownElr": None}
    return {**out, **extra}


_CHANGE_NONE = {"isr": None, "leader": -2, "replicas": None, "removingReplicas": None, "addingReplicas": None,
                "leaderRecoveryState": -1, "directories": None, "eligibleLeaderReplicas": None, "lastKnownElr": None}

# (case, bytes, apiKey, version, expected fields)
RECORDS = [
    ("RegisterBroker v0", B.register_broker(4, version=0, epoch=33, host="h1", rack="rack-a", fenced=False,
                                            incarnation=uuid.UUID(int=5)), 0, 0, _broker(0)),
    ("RegisterBroker v1", B.register_broker(4, version=1, epoch=33, host="h1", rack="rack-a", fenced=False,
                                            in_controlled_shutdown=True, incarnation=uuid.UUID(int=5)), 0, 1,
     _broker(1, inControlledShutdown=True)),
    ("RegisterBroker v2", B.register_broker(4, version=2, epoch=33, host="h1", rack="rack-a", fenced=False,
                                            incarnation=uuid.UUID(int=5)), 0, 2, _broker(2)),
    ("RegisterBroker v3 + LogDirs tag, null rack", B.register_broker(
        4, version=3, epoch=33, host="h1", rack=None, fenced=True, log_dirs=[D1, D2], incarnation=uuid.UUID(int=5)),
     0, 3, _broker(3, rack=None, fenced=True, logDirs=[U(D1), U(D2)])),
    ("RegisterBroker v4 + CordonedLogDirs tag", B.register_broker(
        4, version=4, epoch=33, host="h1", rack="rack-a", fenced=False, log_dirs=[D1, D2], cordoned_log_dirs=[D2],
        incarnation=uuid.UUID(int=5)),
     0, 4, _broker(4, logDirs=[U(D1), U(D2)], cordonedLogDirs=[U(D2)])),
    ("UnregisterBroker v0", B.unregister_broker(4, 33), 1, 0, {"brokerId": 4, "brokerEpoch": 33}),
    ("Topic v0", B.topic("orders", T1), 2, 0, {"name": "orders", "topicId": U(T1)}),
    ("Partition v0", B.partition(T1, 3, [1, 2, 3], isr=[1, 2], leader=2, leader_epoch=7, partition_epoch=9),
     3, 0, _partition(0)),
    ("Partition v0 + LeaderRecoveryState tag", B.partition(T1, 3, [1, 2, 3], isr=[1, 2], leader=2, leader_epoch=7,
                                                         partition_epoch=9, leader_recovery_state=1),
     3, 0, _partition(0, leaderRecoveryState=1)),
    ("Partition v1 directories", B.partition(T1, 3, [1, 2, 3], version=1, isr=[1, 2], leader=2, leader_epoch=7,
                                             partition_epoch=9, directories=[D1, D2, D1]),
     3, 1, _partition(1, directories=[U(D1), U(D2), U(D1)])),
    ("Partition v2 ELR tags", B.partition(T1, 3, [1, 2, 3], version=2, isr=[1, 2], leader=2, leader_epoch=7,
                                          partition_epoch=9, directories=[D1, D2, D1], elr=[3], last_known_elr=[]),
     3, 2, _partition(2, directories=[U(D1), U(D2), U(D1)], eligibleLeaderReplicas=[3], lastKnownElr=[])),
    ("Config v0 set", B.config(2, "orders", "retention.ms", "1000"), 4, 0,
     {"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "1000"}),
    ("Config v0 delete (null value)", B.config(4, "1", "log.cleaner.threads", None), 4, 0,
     {"resourceType": 4, "resourceName": "1", "name": "log.cleaner.threads", "value": None}),
    ("PartitionChange v0 no deltas", B.partition_change(T1, 3), 5, 0,
     {"partitionId": 3, "topicId": U(T1), **_CHANGE_NONE}),
    ("PartitionChange v0 leader + isr + replicas", B.partition_change(
        T1, 3, isr=[2], leader=-1, replicas=[2, 3], removing=[1], adding=[3], leader_recovery_state=1), 5, 0,
     {"partitionId": 3, "topicId": U(T1), **_CHANGE_NONE, "isr": [2], "leader": -1, "replicas": [2, 3],
      "removingReplicas": [1], "addingReplicas": [3], "leaderRecoveryState": 1}),
    ("PartitionChange v1 directories", B.partition_change(T1, 0, version=1, directories=[D2]), 5, 1,
     {"partitionId": 0, "topicId": U(T1), **_CHANGE_NONE, "directories": [U(D2)]}),
    ("PartitionChange v2 ELR", B.partition_change(T2, 1, version=2, elr=[1, 2], last_known_elr=[3]), 5, 2,
     {"partitionId": 1, "topicId": U(T2), **_CHANGE_NONE, "eligibleLeaderReplicas": [1, 2], "lastKnownElr": [3]}),
    ("FenceBroker v0", B.fence_broker(4, 33), 7, 0, {"id": 4, "epoch": 33}),
    ("UnfenceBroker v0", B.unfence_broker(4, 34), 8, 0, {"id": 4, "epoch": 34}),
    ("RemoveTopic v0", B.remove_topic(T2), 9, 0, {"topicId": U(T2)}),
    ("FeatureLevel v0", B.feature_level("metadata.version", 21), 12, 0,
     {"name": "metadata.version", "featureLevel": 21}),
    ("ProducerIds v0", B.producer_ids(1, 2, 5000), 15, 0, {"brokerId": 1, "brokerEpoch": 2, "nextProducerId": 5000}),
    ("BrokerRegistrationChange v0 fenced", B.broker_registration_change(4, fenced=1), 17, 0,
     {"brokerId": 4, "brokerEpoch": 10, "fenced": 1, "inControlledShutdown": 0, "logDirs": [],
      "cordonedLogDirs": None}),
    ("BrokerRegistrationChange v1 unfenced, shutdown", B.broker_registration_change(
        4, version=1, fenced=-1, in_controlled_shutdown=1), 17, 1,
     {"brokerId": 4, "brokerEpoch": 10, "fenced": -1, "inControlledShutdown": 1, "logDirs": [],
      "cordonedLogDirs": None}),
    ("BrokerRegistrationChange v3 cordoned log dirs",
     B.broker_registration_change(4, version=3, log_dirs=[D1], cordoned_log_dirs=[D1]), 17, 3,
     {"brokerId": 4, "brokerEpoch": 10, "fenced": 0, "inControlledShutdown": 0, "logDirs": [U(D1)],
      "cordonedLogDirs": [U(D1)]}),
    ("BrokerRegistrationChange v2 log dirs", B.broker_registration_change(4, version=2, log_dirs=[D1]), 17, 2,
     {"brokerId": 4, "brokerEpoch": 10, "fenced": 0, "inControlledShutdown": 0, "logDirs": [U(D1)],
      "cordonedLogDirs": None}),
    ("NoOp v0", B.no_op(), 20, 0, {}),
    ("BeginTransaction v0 named", B.begin_transaction("bulk"), 23, 0, {"name": "bulk"}),
    ("BeginTransaction v0", B.begin_transaction(), 23, 0, {"name": None}),
    ("EndTransaction v0", B.end_transaction(), 24, 0, {}),
    ("AbortTransaction v0", B.abort_transaction("failover"), 25, 0, {"reason": "failover"}),
    ("RegisterController v0", B.register_controller(3000), 27, 0,
     {"controllerId": 3000, "incarnationId": U(uuid.UUID(int=4000)), "zkMigrationReady": False,
      "endPoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093, "securityProtocol": 0}],
      "features": [{"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1}]}),
    ("ClearElr v0", B.clear_elr("orders"), 28, 0, {"topicName": "orders"}),
    ("DelegationToken v0", B.delegation_token("User:alice", "User:ops", ["User:bob", "User:carol"], 1_700_000_000_000,
                                              1_700_604_800_000, 1_700_086_400_000, "tok-1"), 10, 0,
     {"owner": "User:alice", "requester": "User:ops", "renewers": ["User:bob", "User:carol"],
      "issueTimestamp": 1_700_000_000_000, "maxTimestamp": 1_700_604_800_000,
      "expirationTimestamp": 1_700_086_400_000, "tokenId": "tok-1"}),
    ("UserScramCredential v0", B.user_scram_credential("alice", 1, b"salt\x00", b"\x01\x02stored", b"server\xff", 4096),
     11, 0, {"name": "alice", "mechanism": 1, "salt": base64.b64encode(b"salt\x00").decode(),
             "storedKey": base64.b64encode(b"\x01\x02stored").decode(),
             "serverKey": base64.b64encode(b"server\xff").decode(), "iterations": 4096}),
    ("ClientQuota v0, a null entity name", B.client_quota([("user", "alice"), ("client-id", None)],
                                                          "producer_byte_rate", 1048576.5), 14, 0,
     {"entity": [{"entityType": "user", "entityName": "alice"}, {"entityType": "client-id", "entityName": None}],
      "key": "producer_byte_rate", "value": 1048576.5, "remove": False}),
    ("ClientQuota v0 remove", B.client_quota([("ip", "10.0.0.1")], "connection_creation_rate", 0.0, remove=True),
     14, 0, {"entity": [{"entityType": "ip", "entityName": "10.0.0.1"}], "key": "connection_creation_rate",
             "value": 0.0, "remove": True}),
    ("AccessControlEntry v0", B.access_control_entry(uuid.UUID(int=9), 2, "orders", 3, "User:alice", "*", 3, 3),
     18, 0, {"id": U(uuid.UUID(int=9)), "resourceType": 2, "resourceName": "orders", "patternType": 3,
             "principal": "User:alice", "host": "*", "operation": 3, "permissionType": 3}),
    ("RemoveAccessControlEntry v0", B.remove_access_control_entry(uuid.UUID(int=9)), 19, 0,
     {"id": U(uuid.UUID(int=9))}),
    ("ZkMigrationState v0", B.zk_migration_state(3), 21, 0, {"zkMigrationState": 3}),
    ("RemoveUserScramCredential v0", B.remove_user_scram_credential("alice", 1), 22, 0,
     {"name": "alice", "mechanism": 1}),
    ("RemoveDelegationToken v0", B.remove_delegation_token("tok-1"), 26, 0, {"tokenId": "tok-1"}),
    # written out by hand: frame 01, apiKey 02, version 00, name "t" (02 74), uuid, no tags (00)
    ("Topic v0, hand bytes", bytes.fromhex("010200" + "0274" + "00" * 15 + "2a" + "00"), 2, 0,
     {"name": "t", "topicId": U(uuid.UUID(int=42))}),
    # FenceBroker with apiKey 7 as a 1-byte varint, and a tag (99) the table does not know
    ("FenceBroker v0 unknown tag, hand bytes",
     bytes.fromhex("010700" + "00000001" + "0000000000000002" + "01" + "63" + "01" + "ff"),
     7, 0, {"id": 1, "epoch": 2, "_unknownTaggedFields": {"99": "/w=="}}),
]


@pytest.mark.parametrize("case,data,api_key,version,expected", RECORDS, ids=[r[0] for r in RECORDS])
def test_metadata_record(case, data, api_key, version, expected):
    assert decode_metadata(data) == (api_key, version, expected)


CONTROL = [
    ("LeaderChange", B.leader_change(3001, [3000, 3001]),
     {"version": 0, "leaderId": 3001, "voters": [{"voterId": 3000}, {"voterId": 3001}],
      "grantingVoters": [{"voterId": 3000}, {"voterId": 3001}]}),
    ("SnapshotHeader", B.snapshot_header(1_750_000_000_123),
     {"version": 0, "lastContainedLogTimestamp": 1_750_000_000_123}),
    ("SnapshotFooter", B.snapshot_footer(), {"version": 0}),
    ("KRaftVersion", B.kraft_version(1), {"version": 0, "kRaftVersion": 1}),
    ("Voters", B.voters([3000, 3001]), {"version": 0, "voters": [
        {"voterId": v, "voterUuid": U(uuid.UUID(int=2000 + v)),
         "endpoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093}],
         "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}} for v in (3000, 3001)]}),
]


@pytest.mark.parametrize("case,record,expected", CONTROL, ids=[c[0] for c in CONTROL])
def test_control_record(case, record, expected):
    ctype, value = record
    assert decode_control(struct.pack(">hh", 0, ctype), value) == (ctype, 0, expected)


def test_unknown_api_key_and_version_are_not_errors():
    assert decode_metadata(B.frame(99, 0, b"\x05\x00")) == (99, 0, None)
    assert decode_metadata(B.frame(3, 9, b"\x00")) == (3, 9, None)
    assert decode_control(struct.pack(">hh", 0, 42), b"\x00\x00\x00") == (42, 0, None)


BAD = [
    ("frame version 0", b"\x00" + B.topic("t", T1)[1:], "frame version 0"),
    ("leftover bytes", B.topic("t", T1) + b"\x00", "1 bytes left over after TopicRecord v0"),
    ("cut off", B.topic("orders", T1)[:-5], "runs past"),
    ("string not UTF-8", B.frame(2, 0, b"\x02\xff" + bytes(16) + b"\x00"), "not UTF-8"),
    ("null non-nullable name", B.frame(2, 0, b"\x00" + bytes(16) + b"\x00"), "null name"),
    ("empty value", b"", "cut off"),
    ("tagged field size mismatch", B.frame(5, 0, bytes(20) + b"\x01\x01\x05" + bytes(5)), "tag 1"),
]


@pytest.mark.parametrize("case,data,reason", BAD, ids=[b[0] for b in BAD])
def test_bad_records_raise_typed_errors(case, data, reason):
    with pytest.raises(BadMetadataRecord) as err:
        decode_metadata(data)
    if reason:
        assert reason in str(err.value)


# records the kernel leaves to the Python decoder: nested structs, bytes, floats, a tag the table
# does not know
PYTHON_ONLY = {"RegisterBroker v0", "RegisterBroker v1", "RegisterBroker v2",
               "RegisterBroker v3 + LogDirs tag, null rack", "RegisterBroker v4 + CordonedLogDirs tag",
               "RegisterController v0",
               "FenceBroker v0 unknown tag, hand bytes", "UserScramCredential v0",
               "ClientQuota v0, a null entity name", "ClientQuota v0 remove"}


def _transcode(values: list[bytes]):
    import numpy as np

    from pipelines.kraft import kernels as KK

    ops = KK.compile_ops()
    buf = np.frombuffer(b"".join(values), dtype=np.uint8).copy()
    lens = np.array([len(v) for v in values], dtype=np.int64)
    pos = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    offsets, data, api, ver, status = KK.transcode(buf, pos, lens, ops.prog, ops.ops, ops.text, ops.max_fields)
    return [bytes(data[offsets[i] : offsets[i + 1]]).decode() if status[i] == KK.ST_OK else None
            for i in range(len(values))], api, ver


def test_kernel_json_of_every_flat_record():
    texts, api, ver = _transcode([r[1] for r in RECORDS])
    encode = json.JSONEncoder(separators=(",", ":")).encode
    for (case, data, api_key, version, expected), text, a, v in zip(RECORDS, texts, api, ver, strict=True):
        assert (a, v) == (api_key, version), case
        if case in PYTHON_ONLY:
            assert text is None, case
            continue
        assert json.loads(text) == expected, case
        assert text == encode(decode_metadata(data)[2]), case  # the same text as the Python decoder's


def test_kernel_leaves_bad_unknown_and_non_ascii_records_to_python():
    values = [b[1] for b in BAD] + [B.frame(99, 0, b"\x00"), B.frame(3, 9, b"\x00"), B.config(2, "t", "x", "caf\u00e9")]
    texts, _, _ = _transcode(values)
    assert texts == [None] * len(values)
    escaped = B.config(2, 'q"b\\s\n\x01', "x", None)
    (text,), _, _ = _transcode([escaped])
    assert json.loads(text) == {"resourceType": 2, "resourceName": 'q"b\\s\n\x01', "name": "x", "value": None}
    assert text == json.JSONEncoder(separators=(",", ":")).encode(decode_metadata(escaped)[2])


def test_every_decoded_type_and_version_has_a_case():
    """Every (apiKey, version) the field tables decode is one of RECORDS (a schema added to the
    package without a case of its own fails here)."""
    from pipelines.kraft import messages as M

    tables = {(k, v) for k, msg in M.metadata_messages().items() for v in range(msg.max_version + 1)
              if M.metadata_layout(k, v) is not None}
    assert len(tables) >= 30
    assert tables == {(r[2], r[3]) for r in RECORDS}
