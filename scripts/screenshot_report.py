"""The README's and the docs' picture of the report (``docs/assets/report.png``), made from the
demo so that it shows what kaudit writes today:

    .venv/bin/python scripts/screenshot_report.py [--warehouse DIR] [--out PNG] [--width PX] [--height PX]

Without ``--warehouse`` it runs ``kaudit demo`` into a temporary directory first (as ``make
demo`` does: both clusters); with it, it takes the newest ZooKeeper-era run of that warehouse
(``make demo`` leaves one in ``./warehouse``). Headless Chromium (``testkit/chromium.py``,
Debian's ``chromium``) opens the run's ``index.html`` from disk at a desktop width and saves the
first screen of it."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # testkit/ is not installed with kaudit: it is imported from the checkout

from testkit.chromium import Chromium  # noqa: E402

OUT = REPO / "docs" / "assets" / "report.png"


def zookeeper_report(warehouse: Path) -> Path:
    """The newest report of a run that is not the demo's KRaft run (``<id>-kraft``)."""
    runs = sorted(p for p in (warehouse / "reports").glob("run_id=*") if not p.name.endswith("-kraft"))
    if not runs or not (runs[-1] / "index.html").is_file():
        sys.exit(f"screenshot_report: {warehouse}: no report of a ZooKeeper-era run (run `make demo` first)")
    return runs[-1] / "index.html"


def demo_warehouse(tmp: Path) -> Path:
    warehouse = tmp / "warehouse"
    kaudit = Path(sys.executable).with_name("kaudit")
    subprocess.run([str(kaudit), "--quiet", "--warehouse", str(warehouse), "demo", "--out", str(tmp / "demo-out")],
                   check=True)
    return warehouse


def screenshot(page: Path, out: Path, width: int, height: int) -> Path:
    with tempfile.TemporaryDirectory(prefix="kaudit-chromium-") as profile:
        browser = Chromium(Path(profile))
        try:
            browser.load(page.resolve().as_uri(), width=width, height=height)
            browser.evaluate("document.fonts.ready.then(() => true)")
            out.parent.mkdir(parents=True, exist_ok=True)
            return browser.screenshot(out, full_page=False)
        finally:
            browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", type=Path, help="a warehouse holding a demo run (default: run the demo first)")
    ap.add_argument("--out", type=Path, default=OUT, help="the PNG to write (default: %(default)s)")
    ap.add_argument("--width", type=int, default=1280, help="viewport width in px (default: %(default)s)")
    ap.add_argument("--height", type=int, default=1100, help="viewport height in px (default: %(default)s)")
    args = ap.parse_args()
    if args.warehouse is not None:
        path = screenshot(zookeeper_report(args.warehouse), args.out, args.width, args.height)
    else:
        with tempfile.TemporaryDirectory(prefix="kaudit-screenshot-") as tmp:
            path = screenshot(zookeeper_report(demo_warehouse(Path(tmp))), args.out, args.width, args.height)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
