"""The MM2 scenario's oracle (``testkit.cluster.mm2``) against kaudit's tables.

The truth is what the scenario did and what the clusters answered: the committed offsets of both
clusters (``listConsumerGroupOffsets``), the log ends (``listOffsets``), the planted faults, and
the offset-sync and checkpoint records as the Java clients read them and kafka-python's
protocol types decoded them. From those:

- the raw tables must hold exactly the decoded records;
- the scenario replicates fresh topics record for record, so every sync maps an upstream offset
  to the same downstream offset (checked) and a failover restarts a group right when the target
  holds the source's committed offset: records re-read = source offset - target offset, skipped
  = target offset - source offset, from the two clusters' answers alone;
- MirrorMaker's translation is recomputed here from the decoded syncs by its documented rule
  (``OffsetSyncStore.translateDownstream``), independently of kaudit's Spark code;
- the findings are exactly the planted faults and the excluded group: nothing on the healthy rest.
"""

from __future__ import annotations

TOPIC, REMOTE, PARTITIONS = "orders", "source.orders", 3


def translate(syncs: list[dict], partition: int, offset: int) -> tuple[int | None, dict | None]:
    """MirrorMaker's translation of ``offset`` from the syncs of ``orders``/``partition`` (log
    order): the newest sync at or below it after the last rewind; +1 unless exact."""
    mine = [s for s in syncs if s["topic"] == TOPIC and s["partition"] == partition]
    usable: list[dict] = []
    for s in mine:
        if usable and s["upstream_offset"] < usable[-1]["upstream_offset"]:
            usable = []
        usable.append(s)
    below = [s for s in usable if s["upstream_offset"] <= offset]
    if not below:
        return None, None
    s = below[-1]
    return s["downstream_offset"] + (0 if s["upstream_offset"] == offset else 1), s


def expected_rows(oracle: dict) -> dict[tuple[str, int], dict]:
    """(group, partition) -> the expected ``core/mm2_failover`` columns."""
    syncs, out = oracle["offset_syncs"], {}
    last_cp: dict[tuple[str, int], dict] = {}
    for c in sorted(oracle["checkpoints"], key=lambda c: (c["checkpoints_partition"], c["log_offset"])):
        if c["topic"] == REMOTE:
            last_cp[(c["group_id"], c["partition"])] = c
    keys = {(g, int(k.rsplit(":", 1)[1])) for g, offs in oracle["source_offsets"].items() for k in offs
            if k.rsplit(":", 1)[0] == TOPIC} | set(last_cp)
    for g, p in sorted(keys):
        src = oracle["source_offsets"].get(g, {}).get(f"{TOPIC}:{p}")
        tgt = oracle["target_offsets"].get(g, {}).get(f"{REMOTE}:{p}")
        translated, sync = translate(syncs, p, src) if src is not None else (None, None)
        # syncs are upstream == downstream (checked): the target holds the source's offsets, and
        # the exact restart position is the source offset, known once a sync is at or below it
        known = sync is not None and tgt is not None
        cp = last_cp.get((g, p))
        row = dict(source_committed_offset=src, target_committed_offset=tgt, translated_offset=translated,
                   expected_target_offset=src if sync is not None else None,
                   records_reread=max(src - tgt, 0) if known else None,
                   records_skipped=max(tgt - src, 0) if known else None,
                   checkpoint_upstream_offset=cp and cp["upstream_offset"],
                   checkpoint_downstream_offset=cp and cp["downstream_offset"])
        out[(g, p)] = row
    return out


def expected_findings(oracle: dict) -> set[tuple[str, str, int]]:
    """(finding, group, partition): what the scenario planted, and every partition a group
    committed on the source that no checkpoint record names (the excluded ``x-`` group's, and
    any MirrorMaker did not get to)."""
    did = oracle["did"]
    named = {(c["group_id"], c["partition"]) for c in oracle["checkpoints"] if c["topic"] == REMOTE}
    found = {("never_checkpointed", g, p) for g, offs in oracle["source_offsets"].items()
             for p in range(PARTITIONS) if f"{TOPIC}:{p}" in offs and (g, p) not in named}
    for d in did:
        if d.get("plant") == "target_ahead":
            found.add(("target_ahead_of_translation", d["group"], d["partition"]))
        if d.get("plant") == "checkpoint":
            found.add(("checkpoint_disagrees", d["group"], d["partition"]))
    return found


def compare(oracle: dict, failover: list[dict], findings: list[dict]) -> list[str]:
    """Every disagreement of kaudit's ``core/mm2_failover`` and ``core/mm2_findings`` rows
    with the oracle ([] when they agree on every row and column)."""
    bad = [f"sync {s} maps {s['upstream_offset']} to {s['downstream_offset']}: not record for record"
           for s in oracle["offset_syncs"] if s["upstream_offset"] != s["downstream_offset"]]
    want = expected_rows(oracle)
    got = {(r["group_id"], r["partition"]): r for r in failover if r["topic"] == TOPIC}
    for key in sorted(set(want) | set(got)):
        if key not in got or key not in want:
            bad.append(f"{key}: {'missing' if key not in got else 'unexpected'} row")
            continue
        for col, v in want[key].items():
            if got[key][col] != v:
                bad.append(f"{key} {col}: kaudit {got[key][col]}, oracle {v}")
    have = {(f["finding"], f["group_id"], f["partition"]) for f in findings}
    expected = expected_findings(oracle)
    bad += [f"finding missing: {f}" for f in sorted(expected - have)]
    bad += [f"false finding: {f}" for f in sorted(have - expected)]
    return bad


def compare_raw(oracle: dict, syncs: list[dict], checkpoints: list[dict]) -> list[str]:
    """Disagreements of ``raw/mm2_offset_syncs``/``raw/mm2_checkpoints`` with the records the Java
    clients read and kafka-python decoded."""
    bad = []
    for name, want, got, cols in (
        ("sync", oracle["offset_syncs"], syncs, ("topic", "partition", "upstream_offset", "downstream_offset",
                                                 "log_offset", "syncs_partition")),
        ("checkpoint", oracle["checkpoints"], checkpoints, ("group_id", "topic", "partition", "upstream_offset",
                                                            "downstream_offset", "metadata", "value_version",
                                                            "log_offset", "checkpoints_partition")),
    ):
        w = sorted(tuple(r[c] for c in cols) for r in want)
        g = sorted(tuple(r[c] for c in cols) for r in got)
        if w != g:
            bad.append(f"{name}s: {len(g)} decoded by kaudit, {len(w)} by the oracle; first differences: "
                       f"{[x for x in g if x not in w][:3]} vs {[x for x in w if x not in g][:3]}")
    return bad


def extract(kaudit, source_logs, target_logs, warehouse, run: str = "mm2") -> None:
    """``kaudit --cluster source|target extract offsets|mm2`` of both clusters' log dirs into
    ``warehouse`` (``kaudit``: the in-process CLI of ``testkit.cluster.kraft_oracle``)."""
    base = ["--warehouse", str(warehouse), "--run-id", run]
    for alias, logs in (("source", source_logs), ("target", target_logs)):
        for step in ("offsets", "mm2"):
            code, out = kaudit(*base, "--cluster", alias, "extract", step, str(logs))
            assert code == 0 and "internal error" not in out, out[-3000:]
