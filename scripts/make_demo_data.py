"""Regenerate kaudit's demo cluster (``pipelines/demo/data/`` + ``faults.json``; see
:mod:`testkit.demo`), then commit the output:

    .venv/bin/python scripts/make_demo_data.py [--out DIR] [--kraft-only]

``--out`` writes ``DIR/data/`` and ``DIR/faults.json`` instead (to compare with the committed files).
``--kraft-only`` rewrites only the KRaft cluster (``data/kraft/``, the manifest's ``kraft`` part) of
an existing demo dir: it is deterministic, the ZooKeeper files a real server writes are not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # testkit/ is not installed with kaudit: it is imported from the checkout

from testkit.demo.generate import generate, generate_kraft  # noqa: E402

DEMO = REPO / "pipelines" / "demo"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEMO, help="directory of data/ and faults.json (default: %(default)s)")
    ap.add_argument("--kraft-only", action="store_true", help="rewrite only the KRaft cluster of an existing demo dir")
    args = ap.parse_args()
    manifest = generate_kraft(args.out) if args.kraft_only else generate(args.out)
    zk, kafka, e = manifest["zookeeper"], manifest["kafka"], manifest["expected"]
    print(f"zookeeper: {zk['znodes']} znodes, files {zk['files']}")
    print(
        f"kafka: {len(kafka['offsets_files'])} offsets segments, {e['offset_commit_records']} commits, "
        f"{len(kafka['data_topics'])} data partitions"
    )
    kraft = manifest["kraft"]
    print(f"kraft: {kraft['metadata']['files']}, {len(kraft['offsets_files'])} offsets segments")
    if not args.kraft_only:
        print(json.dumps(e, indent=1))
    print(json.dumps(kraft["expected"], indent=1))


if __name__ == "__main__":
    main()
