"""kaudit's jar for the driver JVMs it starts itself, first on their classpath:

- the ``file:`` scheme: Hadoop's local file system with ``setPermission`` done in-process
  (``NioLocalFileSystem.java`` beside this module says why: Hadoop starts a ``chmod`` process
  per file and directory without its native library, about 900 in the demo's two runs);
- an empty ``yarn-default.xml`` ahead of Hadoop's (the file beside this module says why: half of
  every Hadoop configuration a query ships to its tasks).

    python -m pipelines.spark.local_fs     # what `make` runs after an install

compiles the class against pyspark's jars into ``<venv>/kaudit-spark.jar``. A session uses it
only when that jar exists (:func:`settings`); without it Hadoop's own file system and defaults
apply as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SOURCE = Path(__file__).resolve().with_name("NioLocalFileSystem.java")
YARN_DEFAULTS = SOURCE.with_name("yarn-default.xml")
JAR = Path(sys.prefix) / "kaudit-spark.jar"
CLASS = "kaudit.hadoop.NioLocalFileSystem"
CLASSPATH = "spark.driver.extraClassPath"


def settings(conf: dict[str, str], jar: Path = JAR) -> dict[str, str]:
    """The driver's classpath and ``fs.file.impl`` for the jar, when it exists; a classpath in
    ``conf`` (the user's) keeps its entries after the jar, an ``fs.file.impl`` there wins."""
    if not jar.is_file() or "spark.hadoop.fs.file.impl" in conf:
        return {}
    classpath = os.pathsep.join(filter(None, [str(jar), conf.get(CLASSPATH)]))
    return {CLASSPATH: classpath, "spark.hadoop.fs.file.impl": CLASS}


def build(jar: Path = JAR) -> None:
    """Compiles the source with the JDK's ``javac`` against pyspark's jars and adds the YARN
    defaults; the jar appears whole or not at all."""
    import pyspark

    javac = shutil.which("javac")
    if javac is None:
        sys.exit("javac not found: install a JDK 17 (Debian: openjdk-17-jdk-headless)")
    jars = Path(pyspark.__file__).parent / "jars"
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp)
        done = subprocess.run(
            [javac, "--release", "17", "-nowarn", "-d", str(classes), "-cp", str(jars / "*"), str(SOURCE)],
            capture_output=True, text=True,
        )
        if done.returncode != 0:
            sys.exit(f"javac failed on {SOURCE}:\n{done.stderr}")
        part = jar.with_name(jar.name + ".part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
            out.write(YARN_DEFAULTS, YARN_DEFAULTS.name)
    os.replace(part, jar)


if __name__ == "__main__":
    build()
    print(f"local file system: {JAR} ({JAR.stat().st_size} bytes)")
