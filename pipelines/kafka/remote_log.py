"""The ``__remote_log_metadata`` topic (KIP-405 tiered storage, the default topic-based
RemoteLogMetadataManager): one row per record into ``raw/remote_log_metadata``; records that do
not decode go to ``raw/quarantine`` with file, byte and reason.

Sources: Apache Kafka ``storage/src/main/resources/message/{RemoteLogSegmentMetadataRecord,
RemoteLogSegmentMetadataUpdateRecord,RemotePartitionDeleteMetadataRecord}.json`` (copied
unchanged into ``schemas/``, see ``schemas/REMOTE_LOG_SOURCES.md``);
``server-common/.../serialization/AbstractApiMessageSerde.java`` (the value's frame);
``storage/.../remote/metadata/storage/serialization/RemoteLogMetadataSerde.java`` (apiKey ->
record); ``storage/api/.../RemoteLogSegmentState.java`` and ``RemotePartitionDeleteState.java``
(the state ids); ``storage/.../remote/metadata/storage/ProducerManager.java`` (the record key is
null; the metadata partition is chosen from the topic-partition, so every event of one
partition's segments is in one metadata partition, in log order).

Grammar::

    key   = anything (the broker writes null); not read
    value = uvarint frame version (1), uvarint apiKey, uvarint version,
            flexible struct of the apiKey's schema at that version (``pipelines.kafka.flexible``)
    apiKey 0 RemoteLogSegmentMetadataRecord        a segment's copy started: its offsets, times,
                                                    size, leader epochs, state 0
    apiKey 1 RemoteLogSegmentMetadataUpdateRecord  a segment's later state (1 copy finished,
                                                    2 delete started, 3 delete finished)
    apiKey 2 RemotePartitionDeleteMetadataRecord   the partition's remote data deleted (topic
                                                    deleted): 0 marked, 1 started, 2 finished

A segment holds remote data from its COPY_SEGMENT_FINISHED until its DELETE_SEGMENT_STARTED (the
broker moves the log start past a segment before it deletes it). apiKey 3 (the snapshot record)
is only written to the manager's local snapshot files, never to the topic: met in the topic it
is quarantined, like an unknown apiKey or version.

The topic holds a few records per remote segment: one Python decode per record, after the numba
batch walk.
"""

from __future__ import annotations

import base64
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipelines.arrow import pylist_table
from pipelines.kafka import kernel_tables as K
from pipelines.kafka.batches import ATTR_CONTROL, walk_segment
from pipelines.kafka.errors import UndecodableValue
from pipelines.kafka.flexible import BadStruct, Layout, decode_struct, message, read_schema, uvarint
from pipelines.kafka.segment import read_bytes
from pipelines.kafka.share_state import topic_segments
from pipelines.kafka.topics import REMOTE_LOG_METADATA_TOPIC
from pipelines.warehouse import quarantine as Q
from pipelines.warehouse.tables import RAW_REMOTE_LOG_METADATA

SCHEMA_DIR = Path(__file__).parent / "schemas"
TABLE = "raw/remote_log_metadata"
SOURCE = "log-end"  # of its raw/quarantine rows: the step that reads the log dirs
FRAME_VERSION = 1
RECORDS = {0: "RemoteLogSegmentMetadataRecord", 1: "RemoteLogSegmentMetadataUpdateRecord",
           2: "RemotePartitionDeleteMetadataRecord"}
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                  3: "DELETE_SEGMENT_FINISHED"}
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                           2: "DELETE_PARTITION_FINISHED"}


@cache
def layout(api_key: int, version: int) -> Layout | None:
    """The field table of a record; None for an apiKey or version no schema knows."""
    if api_key not in RECORDS:
        return None
    return message(read_schema(SCHEMA_DIR / f"{RECORDS[api_key]}.json")).layout(version)


def decode_value(value: bytes) -> tuple[int, int, dict]:
    """(apiKey, version, fields) of a value; raises UndecodableValue."""
    try:
        frame, p = uvarint(value, 0)
        api_key, p = uvarint(value, p)
        version, p = uvarint(value, p)
    except (IndexError, BadStruct):
        raise UndecodableValue(f"value of {len(value)} bytes ends inside its header") from None
    if frame != FRAME_VERSION:
        raise UndecodableValue(f"frame version {frame} (only {FRAME_VERSION} is defined)")
    lay = layout(api_key, version)
    if lay is None:
        raise UndecodableValue(f"apiKey {api_key} version {version}: no schema of __remote_log_metadata holds it")
    try:
        return api_key, version, decode_struct(value, p, lay, f"{RECORDS[api_key]} v{version}")
    except BadStruct as err:
        raise UndecodableValue(str(err)) from None


def record_row(api_key: int, v: dict) -> dict:
    """The row of one decoded record (without its place in the log)."""
    seg = v.get("remoteLogSegmentId")
    tp = seg["topicIdPartition"] if seg else v["topicIdPartition"]
    if api_key == 2:
        state_id = v["remotePartitionDeleteState"]
        state = PARTITION_DELETE_STATES.get(state_id, f"state {state_id}")
    else:
        state_id = v["remoteLogSegmentState"]
        state = SEGMENT_STATES.get(state_id, f"state {state_id}")
    custom = v.get("customMetadata")
    epochs = v.get("segmentLeaderEpochs")
    return dict(
        record_type=RECORDS[api_key],
        topic=tp["name"],
        topic_id=tp["id"],
        partition=tp["partition"],
        remote_segment_id=seg["id"] if seg else None,
        start_offset=v.get("startOffset"),
        end_offset=v.get("endOffset"),
        broker_id=v["brokerId"],
        max_timestamp=v.get("maxTimestampMs"),
        event_timestamp=v["eventTimestampMs"],
        segment_leader_epochs=None if epochs is None else [
            dict(leader_epoch=e["leaderEpoch"], start_offset=e["offset"]) for e in epochs],
        segment_size_bytes=v.get("segmentSizeInBytes"),
        state_id=state_id,
        state=state,
        custom_metadata=None if custom is None else base64.b64decode(custom),
    )


def decode_segment(path: Path, metadata_partition: int) -> tuple[list[dict], list[dict]]:
    """(rows, quarantine rows) of one ``__remote_log_metadata`` segment."""
    walk = walk_segment(read_bytes(path))
    buf = walk.buf.tobytes()
    rows = []
    bad = [Q.row(SOURCE, Q.at(path, pos), err, raw) for pos, err, raw in walk.bad]
    recs, bt = walk.records, walk.batches
    if not len(recs):
        return rows, bad
    brow = walk.region_batch[recs[:, K.C_REGION]]
    control = (bt[brow, K.B_ATTRS] & ATTR_CONTROL) != 0
    for i in np.flatnonzero(~control):
        r = recs[i]
        vl = int(r[K.C_VAL_LEN])
        where = Q.at(path, int(r[K.C_REC_POS]))
        if vl < 0:
            bad.append(Q.row(SOURCE, where, "UndecodableValue: null value (a metadata event always has one)"))
            continue
        value = buf[r[K.C_VAL_POS] : r[K.C_VAL_POS] + vl]
        try:
            api_key, _, fields = decode_value(value)
        except UndecodableValue as err:
            bad.append(Q.row(SOURCE, where, err, value))
            continue
        rows.append({**record_row(api_key, fields), "metadata_partition": metadata_partition,
                     "log_offset": int(r[K.C_OFFSET]), "batch_timestamp": int(bt[brow[i], K.B_BASE_TS]),
                     "segment_file": str(path)})
    return rows, bad


def decode_paths(paths: list[Path]) -> tuple[pa.Table, list[dict], int]:
    """The ``raw/remote_log_metadata`` table of every ``__remote_log_metadata`` segment under
    ``paths`` (log dirs or its partition dirs), its quarantine rows and the number of files."""
    rows, bad = [], []
    files = topic_segments(paths, REMOTE_LOG_METADATA_TOPIC)
    for n, f in files:
        r, b = decode_segment(f, n)
        rows += r
        bad += b
    rows.sort(key=lambda x: (x["metadata_partition"], x["log_offset"]))
    return pylist_table(rows, RAW_REMOTE_LOG_METADATA), bad, len(files)
