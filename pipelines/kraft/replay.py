"""Replaying decoded KRaft metadata records into the cluster's registry, as the controller's
image does (``metadata/.../image/*Delta.java``, ``PartitionRegistration.merge``).

- RegisterBroker replaces the broker; UnregisterBroker removes it; Fence/Unfence and
  BrokerRegistrationChange (Fenced -1 unfenced, 0 no change, 1 fenced; InControlledShutdown
  1 = in controlled shutdown) change its state.
- TopicRecord creates a topic id; RemoveTopic drops the topic, its partitions and its configs
  (a re-created topic has a new id: both stay in :attr:`Registry.topic_history`).
- PartitionRecord sets a partition; PartitionChange applies the fields it carries (Leader -2 =
  unchanged, a null list = unchanged, LeaderRecoveryState -1 = unchanged): a new leader bumps
  the leader epoch, every change the partition epoch. ClearElr empties the ELR and last known
  ELR of one topic (by name), or of every topic when the name is empty.
- ConfigRecord sets a config (a null value deletes it); FeatureLevel sets a feature (level 0
  removes it).
- Begin/End/AbortTransaction: the records between BeginTransaction and EndTransaction apply
  at EndTransaction; those before an AbortTransaction never apply; a transaction still open
  at the end of the replay does not apply (:attr:`Registry.pending`).
- The Raft LeaderChange control record names the active controller.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

REGISTER_BROKER, UNREGISTER_BROKER, TOPIC, PARTITION, CONFIG, PARTITION_CHANGE = 0, 1, 2, 3, 4, 5
FENCE_BROKER, UNFENCE_BROKER, REMOVE_TOPIC, FEATURE_LEVEL, BROKER_REGISTRATION_CHANGE = 7, 8, 9, 12, 17
BEGIN_TXN, END_TXN, ABORT_TXN, CLEAR_ELR = 23, 24, 25, 28
NO_LEADER_CHANGE = -2

# ConfigResource.Type ids
RESOURCE_TYPES = {0: "unknown", 2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}


@dataclass
class Registry:
    brokers: dict[int, dict] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)  # topic id -> name (live topics)
    partitions: dict[str, dict[int, dict]] = field(default_factory=dict)  # topic id -> partition -> state
    configs: dict[tuple[int, str, str], str] = field(default_factory=dict)  # (type, resource, name)
    features: dict[str, int] = field(default_factory=dict)
    topic_history: dict[str, dict] = field(default_factory=dict)  # topic id -> created/deleted
    controller_id: int | None = None
    last_offset: int | None = None  # the last record applied
    last_timestamp: int | None = None
    pending: list = field(default_factory=list)  # records of an open metadata transaction
    in_txn: bool = False
    aborted: int = 0  # records dropped by AbortTransaction

    # -- entry points -----------------------------------------------------------------
    def apply(self, api_key: int, r: dict, offset: int, timestamp: int) -> str | None:
        """Apply one decoded metadata record; returns its transaction state when it is part
        of a metadata transaction ('begin', 'in', 'end', 'aborted' - the caller's marker)."""
        if api_key == BEGIN_TXN:
            self.in_txn, self.pending = True, []
            return "begin"
        if api_key == END_TXN:
            for args in self.pending:
                self._apply(*args)
            self.in_txn, self.pending = False, []
            self._mark(offset, timestamp)
            return "end"
        if api_key == ABORT_TXN:
            self.aborted += len(self.pending)
            self.in_txn, self.pending = False, []
            self._mark(offset, timestamp)
            return "aborted"
        if self.in_txn:
            self.pending.append((api_key, r, offset, timestamp))
            return "in"
        self._apply(api_key, r, offset, timestamp)
        return None

    def apply_partitions(self, records: pa.Table, is_record: np.ndarray) -> None:
        """Apply a run of PartitionRecords / PartitionChangeRecords (``records``: their fields,
        in log order; ``is_record``: which are PartitionRecords) outside any metadata
        transaction, with nothing between them that touches partitions - as :meth:`apply`
        would one by one, but per partition: the last PartitionRecord of each partition (or its
        current state), then of the changes after it the last value of each field and the
        counts of leader changes and changes (leader and partition epochs). The caller marks
        the offset."""
        n = records.num_rows
        if not n:
            return
        ids = records["topicId"].combine_chunks().dictionary_encode()
        tid = ids.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        pid = records["partitionId"].to_numpy(zero_copy_only=False).astype(np.int64)
        order = np.argsort((tid << 32) | pid, kind="stable")
        key = ((tid << 32) | pid)[order]
        first = np.r_[True, key[1:] != key[:-1]]
        starts = np.flatnonzero(first)
        group = np.cumsum(first) - 1
        pos = np.arange(n)
        rec = is_record[order]
        base = np.maximum.reduceat(np.where(rec, pos, -1), starts)
        change = ~rec & (pos > base[group])

        def last(mask: np.ndarray) -> np.ndarray:  # sorted position of the group's last row in mask, else -1
            return np.maximum.reduceat(np.where(mask, pos, -1), starts)

        def column(name: str) -> np.ndarray:
            return records[name].to_numpy(zero_copy_only=False)[order]

        leader, lrs = column("leader"), column("leaderRecoveryState")
        leader_set = change & (leader != NO_LEADER_CHANGE)
        n_changes, n_leaders = np.add.reduceat(change, starts), np.add.reduceat(leader_set, starts)
        scalar_last = {"leader": last(leader_set), "leader_recovery_state": last(change & (lrs != -1))}
        list_last = {key: last(change & records[name].is_valid().to_numpy(zero_copy_only=False)[order])
                     for name, key in _CHANGE_LISTS}

        def values(name: str, at: np.ndarray) -> list:  # per group: the field at a sorted position (-1: None)
            out, hit = [None] * len(at), np.flatnonzero(at >= 0)
            for g, v in zip(hit.tolist(), records[name].take(pa.array(order[at[hit]])).to_pylist(), strict=True):
                out[g] = v
            return out

        base_rows = iter(records.take(pa.array(order[base[base >= 0]])).to_pylist())
        names = ids.dictionary.to_pylist()
        tids = [names[i] for i in tid[order[starts]].tolist()]
        pids = pid[order[starts]].tolist()
        got = {k: values(name, list_last[k]) for name, k in _CHANGE_LISTS}
        for key, col in (("leader", leader), ("leader_recovery_state", lrs)):
            at = scalar_last[key]
            got[key] = np.where(at >= 0, col[np.maximum(at, 0)], 0).tolist()
            for g in np.flatnonzero(at < 0).tolist():
                got[key][g] = None
        for g, (tid, p_id, b) in enumerate(zip(tids, pids, base.tolist(), strict=True)):
            if b >= 0:
                self._partition(next(base_rows), None, None)
            p = self.partitions.get(tid, {}).get(p_id)
            if p is None:
                continue
            for key, vals in got.items():
                if vals[g] is not None:
                    p[key] = vals[g]
            p["leader_epoch"] += int(n_leaders[g])
            p["partition_epoch"] += int(n_changes[g])

    def apply_configs(self, records: pa.Table) -> None:
        """Apply a run of ConfigRecords (``records``: their fields, in log order) with nothing
        between them that drops configs: the last value of each (resource type, resource,
        name) wins; a null value deletes the config. The caller marks the offset."""
        key = ["resourceType", "resourceName", "name"]
        at = pa.array(np.arange(records.num_rows))
        last = records.select(key).append_column("at", at).group_by(key, use_threads=False).aggregate([("at", "max")])
        final = records.take(last["at_max"])
        for t, name, config, value in zip(*(final[c].to_pylist() for c in (*key, "value")), strict=True):
            if value is None:
                self.configs.pop((t, name, config), None)
            else:
                self.configs[(t, name, config)] = value

    def leader_change(self, leader_id: int) -> None:
        self.controller_id = leader_id if leader_id >= 0 else None

    def _mark(self, offset: int, timestamp: int) -> None:
        self.last_offset, self.last_timestamp = offset, timestamp

    # -- the records ------------------------------------------------------------------
    def _apply(self, api_key: int, r: dict, offset: int, timestamp: int) -> None:
        self._mark(offset, timestamp)
        handler = _HANDLERS.get(api_key)
        if handler is not None:
            handler(self, r, offset, timestamp)

    def _register_broker(self, r, offset, ts):
        self.brokers[r["brokerId"]] = {
            "broker_id": r["brokerId"],
            "incarnation_id": r["incarnationId"],
            "broker_epoch": r["brokerEpoch"],
            "endpoints": r["endPoints"],
            "rack": r["rack"],
            "fenced": r["fenced"],
            "in_controlled_shutdown": r["inControlledShutdown"],
            "log_dirs": r["logDirs"],
            "registered_offset": offset,
        }

    def _unregister_broker(self, r, offset, ts):
        self.brokers.pop(r["brokerId"], None)

    def _fence(self, r, offset, ts, fenced: bool):
        b = self.brokers.get(r["id"])
        if b is not None:
            b["fenced"] = fenced

    def _registration_change(self, r, offset, ts):
        b = self.brokers.get(r["brokerId"])
        if b is None:
            return
        if r["fenced"] == 1:
            b["fenced"] = True
        elif r["fenced"] == -1:
            b["fenced"] = False
        if r["inControlledShutdown"] == 1:
            b["in_controlled_shutdown"] = True
        if r["logDirs"]:
            b["log_dirs"] = r["logDirs"]

    def _topic(self, r, offset, ts):
        self.topics[r["topicId"]] = r["name"]
        self.topic_history[r["topicId"]] = {"topic_id": r["topicId"], "topic": r["name"], "created_offset": offset,
                                            "created_at": ts, "deleted_offset": None, "deleted_at": None}

    def _remove_topic(self, r, offset, ts):
        tid = r["topicId"]
        name = self.topics.pop(tid, None)
        self.partitions.pop(tid, None)
        if name is not None:
            for key in [k for k in self.configs if k[0] == 2 and k[1] == name]:
                del self.configs[key]
        if tid in self.topic_history:
            self.topic_history[tid].update(deleted_offset=offset, deleted_at=ts)

    def _partition(self, r, offset, ts):
        self.partitions.setdefault(r["topicId"], {})[r["partitionId"]] = {
            "replicas": r["replicas"],
            "isr": r["isr"],
            "removing_replicas": r["removingReplicas"],
            "adding_replicas": r["addingReplicas"],
            "leader": r["leader"],
            "leader_recovery_state": r["leaderRecoveryState"],
            "leader_epoch": r["leaderEpoch"],
            "partition_epoch": r["partitionEpoch"],
            "directories": r["directories"],
            "eligible_leader_replicas": r["eligibleLeaderReplicas"],
            "last_known_elr": r["lastKnownElr"],
        }

    def _partition_change(self, r, offset, ts):
        p = self.partitions.get(r["topicId"], {}).get(r["partitionId"])
        if p is None:
            return
        for name, key in _CHANGE_LISTS:
            if r[name] is not None:
                p[key] = r[name]
        if r["leader"] != NO_LEADER_CHANGE:
            p["leader"] = r["leader"]
            p["leader_epoch"] += 1
        if r["leaderRecoveryState"] != -1:
            p["leader_recovery_state"] = r["leaderRecoveryState"]
        p["partition_epoch"] += 1

    def _clear_elr(self, r, offset, ts):
        name = r["topicName"]
        for tid, parts in self.partitions.items():
            if not name or self.topics.get(tid) == name:
                for p in parts.values():
                    p["eligible_leader_replicas"], p["last_known_elr"] = [], []

    def _config(self, r, offset, ts):
        key = (r["resourceType"], r["resourceName"], r["name"])
        if r["value"] is None:
            self.configs.pop(key, None)
        else:
            self.configs[key] = r["value"]

    def _feature(self, r, offset, ts):
        if r["featureLevel"] == 0:
            self.features.pop(r["name"], None)
        else:
            self.features[r["name"]] = r["featureLevel"]


_HANDLERS = {
    REGISTER_BROKER: Registry._register_broker,
    UNREGISTER_BROKER: Registry._unregister_broker,
    FENCE_BROKER: lambda s, r, o, t: s._fence(r, o, t, True),
    UNFENCE_BROKER: lambda s, r, o, t: s._fence(r, o, t, False),
    BROKER_REGISTRATION_CHANGE: Registry._registration_change,
    TOPIC: Registry._topic,
    REMOVE_TOPIC: Registry._remove_topic,
    PARTITION: Registry._partition,
    PARTITION_CHANGE: Registry._partition_change,
    CLEAR_ELR: Registry._clear_elr,
    CONFIG: Registry._config,
    FEATURE_LEVEL: Registry._feature,
}
REPLAYED = tuple(_HANDLERS)  # the apiKeys that change the registry
# PartitionChangeRecord lists: JSON name -> state key (null = unchanged)
_CHANGE_LISTS = (("replicas", "replicas"), ("isr", "isr"), ("removingReplicas", "removing_replicas"),
                 ("addingReplicas", "adding_replicas"), ("directories", "directories"),
                 ("eligibleLeaderReplicas", "eligible_leader_replicas"), ("lastKnownElr", "last_known_elr"))
# the fields of ConfigRecord and of PartitionRecord / PartitionChangeRecord as Arrow reads their JSON lines
CONFIG_FIELDS = pa.schema([("resourceType", pa.int8()), ("resourceName", pa.string()), ("name", pa.string()),
                           ("value", pa.string())])
PARTITION_FIELDS = pa.schema([
    ("topicId", pa.string()), ("partitionId", pa.int32()), ("leader", pa.int32()), ("leaderRecoveryState", pa.int8()),
    ("leaderEpoch", pa.int32()), ("partitionEpoch", pa.int32()),
    *[(name, pa.list_(pa.string() if name == "directories" else pa.int32())) for name, _ in _CHANGE_LISTS],
])
