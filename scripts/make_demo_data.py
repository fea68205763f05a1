"""Regenerate kaudit's demo cluster (``pipelines/demo/data/`` + ``faults.json``; see
:mod:`testkit.demo`), then commit the output:

    .venv/bin/python scripts/make_demo_data.py [--out DIR]

``--out`` writes ``DIR/data/`` and ``DIR/faults.json`` instead (to compare with the committed files).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from testkit.demo.generate import generate

DEMO = Path(__file__).resolve().parents[1] / "pipelines" / "demo"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEMO, help="directory of data/ and faults.json (default: %(default)s)")
    manifest = generate(ap.parse_args().out)
    zk, kafka, e = manifest["zookeeper"], manifest["kafka"], manifest["expected"]
    print(f"zookeeper: {zk['znodes']} znodes, files {zk['files']}")
    print(
        f"kafka: {len(kafka['offsets_files'])} offsets segments, {e['offset_commit_records']} commits, "
        f"{len(kafka['data_topics'])} data partitions"
    )
    print(json.dumps(e, indent=1))


if __name__ == "__main__":
    main()
