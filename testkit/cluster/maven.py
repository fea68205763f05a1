"""Jars of real Apache Kafka and ZooKeeper releases, fetched from Maven Central once and cached.

Each *bundle* is a named set of Maven coordinates (``group:artifact:version``) resolved with
their dependencies by ``mvn dependency:copy-dependencies`` from a generated POM into
``<cache>/<bundle>/lib/``; a ``classpath`` file beside it lists the jars and marks the bundle
complete (a fetch that was killed leaves no ``classpath`` file and is done again; so does a
bundle whose coordinates changed: they are kept in a ``coords`` file beside it). The cache is
``$KAUDIT_JAR_CACHE``, else ``<repo>/.venv/kaudit-jars`` (``make distclean`` removes it with the
venv); Maven's own repository (``~/.m2``) keeps the downloads themselves.

``python -m testkit.cluster.maven NAME...`` fetches bundles ahead (``make cluster-jars``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("KAUDIT_JAR_CACHE", REPO / ".venv" / "kaudit-jars"))

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kaudit.testkit</groupId><artifactId>{name}</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""
_DEP = ("    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
        "{classifier}{exclusions}</dependency>")


class FetchError(RuntimeError):
    """Maven could not resolve a bundle (the message holds Maven's last lines)."""


def _dependency(coord: str) -> str:
    parts = coord.split(":")
    if len(parts) not in (3, 4):
        raise ValueError(f"not group:artifact:version[:classifier]: {coord!r}")
    g, a, v = parts[:3]
    classifier = f"<classifier>{escape(parts[3])}</classifier>" if len(parts) == 4 else ""
    return _DEP.format(g=escape(g), a=escape(a), v=escape(v), classifier=classifier, exclusions="")


def fetch(name: str, coords: list[str] | tuple[str, ...], cache: Path = CACHE) -> list[Path]:
    """The jars of ``coords`` and their dependencies (cached under ``cache/name``)."""
    home = cache / name
    listing = home / "classpath"
    wanted = "\n".join(coords)
    if listing.exists() and (home / "coords").exists() and (home / "coords").read_text() == wanted:
        jars = [Path(p) for p in listing.read_text().split(os.pathsep) if p]
        if all(j.exists() for j in jars):
            return jars
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}.", dir=cache) as tmp:
        work = Path(tmp)
        deps = "\n".join(_dependency(c) for c in coords)
        (work / "pom.xml").write_text(_POM.format(name=escape(name), deps=deps))
        lib = work / "lib"
        proc = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
             f"-DoutputDirectory={lib}", "-DincludeScope=runtime"],
            capture_output=True, text=True,
        )
        if proc.returncode != 0 or not lib.is_dir():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise FetchError(f"mvn could not resolve {name} ({', '.join(coords)}):\n{tail}")
        if home.exists():
            shutil.rmtree(home)
        home.mkdir()
        lib.rename(home / "lib")
    jars = sorted((home / "lib").glob("*.jar"))
    (home / "coords").write_text(wanted)
    listing.write_text(os.pathsep.join(str(j) for j in jars))
    return jars


def classpath(name: str, coords: list[str] | tuple[str, ...], cache: Path = CACHE) -> str:
    return os.pathsep.join(str(j) for j in fetch(name, coords, cache))


def main(argv: list[str]) -> int:
    from testkit.cluster.versions import BUNDLES

    names = argv or sorted(BUNDLES)
    unknown = [n for n in names if n not in BUNDLES]
    if unknown:
        print(f"unknown bundle(s): {', '.join(unknown)}; known: {', '.join(sorted(BUNDLES))}", file=sys.stderr)
        return 2
    for n in names:
        jars = fetch(n, BUNDLES[n])
        print(f"{n}: {len(jars)} jars")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
