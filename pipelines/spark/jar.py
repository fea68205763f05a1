"""kaudit's jar for the driver JVMs it starts itself, first on their classpath:

- the ``file:`` scheme: Hadoop's local file system with ``setPermission`` done in-process
  (``NioLocalFileSystem.java`` beside this module says why: Hadoop starts a ``chmod`` process
  per file and directory without its native library, about 900 in the demo's two runs);
- a session extension: a small run's queries coalesce where they would shuffle into one
  partition (``OnePartition.java`` beside this module says why);
- an empty ``yarn-default.xml`` ahead of Hadoop's (the file beside this module says why: half of
  every Hadoop configuration a query ships to its tasks).

    python -m pipelines.spark.jar     # what `make` runs after an install

compiles the classes against pyspark's jars into ``<venv>/kaudit-spark.jar``. A session uses it
only when that jar exists (:func:`settings`); without it Hadoop's own file system and defaults,
and Spark's exchanges, apply as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = (HERE / "NioLocalFileSystem.java", HERE / "OnePartition.java")
YARN_DEFAULTS = HERE / "yarn-default.xml"
JAR = Path(sys.prefix) / "kaudit-spark.jar"
CLASS = "kaudit.hadoop.NioLocalFileSystem"
EXTENSION = "kaudit.spark.OnePartition"
CLASSPATH = "spark.driver.extraClassPath"
EXTENSIONS = "spark.sql.extensions"


def settings(conf: dict[str, str], jar: Path = JAR) -> dict[str, str]:
    """The driver's classpath, ``fs.file.impl`` and session extensions for the jar, when it
    exists; a classpath or extensions in ``conf`` (the user's) keep their entries after the
    jar's, an ``fs.file.impl`` there wins."""
    if not jar.is_file():
        return {}
    classpath = os.pathsep.join(filter(None, [str(jar), conf.get(CLASSPATH)]))
    extensions = ",".join(filter(None, [EXTENSION, conf.get(EXTENSIONS)]))
    files = {} if "spark.hadoop.fs.file.impl" in conf else {"spark.hadoop.fs.file.impl": CLASS}
    return {CLASSPATH: classpath, EXTENSIONS: extensions, **files}


def build(jar: Path = JAR) -> None:
    """Compiles the sources with the JDK's ``javac`` against pyspark's jars and adds the YARN
    defaults; the jar appears whole or not at all."""
    import pyspark

    javac = shutil.which("javac")
    if javac is None:
        sys.exit("javac not found: install a JDK 17 (Debian: openjdk-17-jdk-headless)")
    jars = Path(pyspark.__file__).parent / "jars"
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp)
        done = subprocess.run(
            [javac, "--release", "17", "-nowarn", "-d", str(classes), "-cp", str(jars / "*"), *map(str, SOURCES)],
            capture_output=True, text=True,
        )
        if done.returncode != 0:
            sys.exit(f"javac failed on {', '.join(map(str, SOURCES))}:\n{done.stderr}")
        part = jar.with_name(jar.name + ".part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
            out.write(YARN_DEFAULTS, YARN_DEFAULTS.name)
    os.replace(part, jar)


if __name__ == "__main__":
    build()
    print(f"kaudit's jar: {JAR} ({JAR.stat().st_size} bytes)")
