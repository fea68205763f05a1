"""Keep what a real KRaft cluster wrote as a small regression fixture, with the oracle beside it.

``python -m testkit.cluster.kraft_fixtures VERSION SCENARIO [DEST]`` runs the scenario
(testkit.cluster.kraft_scenarios) on ``kafka-VERSION`` and copies into
``DEST`` (default ``tests/fixtures/kafka-real/<VERSION>-<SCENARIO>/``):

- ``logs/``: the broker's log dir, ``.log`` segments only (no indexes: kaudit reads none), of
  every partition that holds records, with ``meta.properties`` and the
  ``log-start-offset-checkpoint``;
- ``metadata/__cluster_metadata-0/``: the controller's metadata log segments and snapshots,
  with ``meta.properties`` beside it;
- ``oracle.json``: the cluster's own answers before the brokers stopped, the planted faults
  and the requests the scenario made (``kraft_scenarios.as_json``).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from testkit.cluster.kraft_scenarios import Outcome, as_json, from_json, run_scenario

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "kafka-real"
_KEEP_BESIDE = ("meta.properties", "log-start-offset-checkpoint")


def _copy_log_dir(src: Path, dest: Path, suffixes: tuple[str, ...]) -> None:
    dest.mkdir(parents=True)
    for name in _KEEP_BESIDE:
        if (src / name).exists():
            shutil.copy(src / name, dest / name)
    for part in sorted(p for p in src.iterdir() if p.is_dir()):
        files = [f for f in sorted(part.iterdir()) if f.name.endswith(suffixes) and f.stat().st_size > 0]
        if files:
            (dest / part.name).mkdir()
            for f in files:
                shutil.copy(f, dest / part.name / f.name)


def keep(version: str, scenario: str, dest: Path | None = None) -> Path:
    dest = dest or FIXTURES / f"{version}-{scenario}"
    with tempfile.TemporaryDirectory(prefix="kraft-fixture-") as tmp:
        outcome = run_scenario(f"kafka-{version}", scenario, Path(tmp) / "cluster")
        if dest.exists():
            shutil.rmtree(dest)
        _copy_log_dir(outcome.log_dirs[0], dest / "logs", (".log",))
        _copy_log_dir(outcome.metadata_dir.parent, dest / "metadata", (".log", ".checkpoint"))
    (dest / "oracle.json").write_text(json.dumps(as_json(outcome), indent=1, sort_keys=True) + "\n")
    return dest


def outcome(case: Path) -> Outcome:
    """A kept fixture as the outcome of its run: ``oracle.json`` with the copied data dirs."""
    return from_json(json.loads((case / "oracle.json").read_text()), [case / "logs"],
                     case / "metadata" / "__cluster_metadata-0")


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python -m testkit.cluster.kraft_fixtures VERSION SCENARIO [DEST]", file=sys.stderr)
        return 2
    print(keep(argv[0], argv[1], Path(argv[2]) if len(argv) == 3 else None))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
