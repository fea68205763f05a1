"""The jars a Spark session needs for Iceberg tables, from Maven Central, pinned and cached.

- ``iceberg-spark-runtime-4.1_2.13``: Iceberg's Spark catalog and data source for Spark 4.1 /
  Scala 2.13 (pyspark here is 4.1; the runtime jar is shaded, it needs no other jar);
- ``sqlite-jdbc``: the JDBC driver of the embedded catalog, a SQLite file the Python writers
  (pyiceberg's SQL catalog) and Spark (Iceberg's JDBC catalog) share;
- ``postgresql``: the JDBC driver of a team's catalog on PostgreSQL (``--catalog postgresql://``);
- ``iceberg-aws-bundle``: Iceberg's ``S3FileIO`` and the AWS SDK parts it uses, for a warehouse
  on S3 (``s3a://``/``s3://`` locations). It is used instead of Hadoop's S3A file system, whose
  ``hadoop-aws`` needs the AWS SDK's full bundle (``software.amazon.awssdk:bundle``, hundreds of
  MB): Iceberg reads and writes a table's files through its own FileIO, never through Hadoop's.

    python -m pipelines.warehouse.iceberg.jars      # `make iceberg-jars`

copies each jar (``mvn dependency:copy``, no dependencies: each is self-contained) into
``<venv>/kaudit-iceberg-jars/``; a jar appears there whole (copied to a temporary name, then
renamed) or not at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ICEBERG = "1.12.0"
JARS = (
    f"org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:{ICEBERG}",
    f"org.apache.iceberg:iceberg-aws-bundle:{ICEBERG}",
    "org.xerial:sqlite-jdbc:3.51.0.0",
    "org.postgresql:postgresql:42.7.14",
)
CACHE = Path(os.environ.get("KAUDIT_ICEBERG_JARS", Path(sys.prefix) / "kaudit-iceberg-jars"))


class JarsMissing(RuntimeError):
    """The Iceberg jars are not fetched (``make iceberg-jars``) or Maven could not get them."""


def jar_name(coord: str) -> str:
    _, artifact, version = coord.split(":")
    return f"{artifact}-{version}.jar"


def paths(cache: Path = CACHE) -> list[Path]:
    """The cached jars, in ``JARS``' order; :class:`JarsMissing` names those not fetched yet."""
    found = [cache / jar_name(c) for c in JARS]
    missing = [p.name for p in found if not p.is_file()]
    if missing:
        raise JarsMissing(f"Iceberg's jars are not in {cache} ({', '.join(missing)}): run `make iceberg-jars`")
    return found


def fetch(cache: Path = CACHE) -> list[Path]:
    """Copies every jar of ``JARS`` not cached yet from Maven Central into ``cache``."""
    mvn = shutil.which("mvn")
    cache.mkdir(parents=True, exist_ok=True)
    for coord in JARS:
        final = cache / jar_name(coord)
        if final.is_file():
            continue
        if mvn is None:
            raise JarsMissing("mvn not found: install Maven (Debian: maven) to fetch Iceberg's jars")
        with tempfile.TemporaryDirectory(prefix=".fetch.", dir=cache) as tmp:
            done = subprocess.run(
                [mvn, "-q", "-B", "dependency:copy", f"-Dartifact={coord}", f"-DoutputDirectory={tmp}",
                 "-Dmdep.overWriteReleases=true"],
                capture_output=True, text=True,
            )
            got = Path(tmp) / final.name
            if done.returncode != 0 or not got.is_file():
                tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
                raise JarsMissing(f"mvn could not fetch {coord}:\n{tail}")
            os.replace(got, final)
    return paths(cache)


if __name__ == "__main__":
    try:
        for jar in fetch():
            print(f"{jar} ({jar.stat().st_size} bytes)")
    except JarsMissing as err:
        sys.exit(str(err))
