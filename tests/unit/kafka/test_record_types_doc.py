"""docs/matrix.md's table of the record types kaudit decodes per Kafka version is the one
scripts/record_types.py counts on the kept real fixtures now (kaudit's extractors on bytes real
brokers wrote), and it names what the decoders know that no fixture holds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "record_types.py"


def _script():
    spec = importlib.util.spec_from_file_location("record_types", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_record_types_section_is_current():
    rt = _script()
    seen = rt.counted()
    # every fixture's Kafka version is counted, with each topic its data dirs hold
    assert set(seen) == {v for v, _ in rt.FIXTURES}
    topics = {k[0] for c in seen.values() for k in c}
    assert topics == {rt.OFFSETS, rt.SHARE, rt.METADATA}
    # the share groups' records of 4.2.2: both __share_group_state kinds and key types 10-15
    share = {k[1] for k in seen["4.2.2"] if k[0] == rt.SHARE}
    assert share == {0, 1} and {10, 11, 12, 13, 14, 15} <= {k[1] for k in seen["4.2.2"] if k[0] == rt.OFFSETS}
    assert not rt.stale(rt.section(seen)), "docs/matrix.md is stale: python scripts/record_types.py --write"
