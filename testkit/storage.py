"""A real S3-compatible server for tests: S3Proxy (``org.gaul:s3proxy``, Maven Central) on
127.0.0.1 and a free port, its objects in a directory (jclouds' ``filesystem`` blob store).

S3Proxy serves the S3 REST API (signature v2 and v4) in front of a jclouds blob store; with
the filesystem store a bucket is a directory and an object a file under ``<root>/blobs``, so a
test can also look at what was written. Its jars are a Maven bundle of
``testkit/cluster/versions.py`` (``s3proxy-<version>``), fetched once into the jar cache
(``python -m testkit.storage``: ``make iceberg-jars``).

    with S3Proxy(tmp_path).start() as s3:
        s3.create_bucket("kaudit")
        env = s3.env()   # AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ... for clients
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from testkit.cluster.maven import classpath
from testkit.cluster.versions import BUNDLES, S3PROXY
from testkit.servers import await_server, stop_group
from testkit.zk_server import free_port

BUNDLE = f"s3proxy-{S3PROXY}"
IDENTITY = "kaudit-test"
CREDENTIAL = "kaudit-test-secret"
REGION = "us-east-1"
# S3Proxy 3.0 rejects the CRC64NVME checksums that current AWS SDKs (pyarrow's C++ one, the Java
# v2 one in Iceberg's S3FileIO) add to every upload by default ("Unknown value:
# x-amz-checksum-crc64nvme", HTTP 400): the clients send checksums only where S3 requires them
CHECKSUMS = {"AWS_REQUEST_CHECKSUM_CALCULATION": "when_required", "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required"}
LOGBACK = Path(__file__).resolve().with_name("s3proxy-logback.xml")  # warnings only (its default: DEBUG)


@dataclass
class S3Proxy:
    root: Path
    port: int = 0
    proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def blobs(self) -> Path:
        return self.root / "blobs"

    def env(self) -> dict[str, str]:
        """The environment S3 clients (pyarrow, the AWS SDK) take the endpoint and keys from."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": IDENTITY,
                "AWS_SECRET_ACCESS_KEY": CREDENTIAL, "AWS_REGION": REGION, **CHECKSUMS}

    def start(self, timeout: float = 90) -> S3Proxy:
        self.root.mkdir(parents=True, exist_ok=True)
        self.blobs.mkdir(exist_ok=True)
        self.port = self.port or free_port()
        props = self.root / "s3proxy.conf"
        props.write_text(
            f"s3proxy.endpoint={self.endpoint}\n"
            "s3proxy.authorization=aws-v2-or-v4\n"
            f"s3proxy.identity={IDENTITY}\n"
            f"s3proxy.credential={CREDENTIAL}\n"
            "jclouds.provider=filesystem-nio2\n"
            f"jclouds.filesystem.basedir={self.blobs}\n"
            f"jclouds.identity={IDENTITY}\n"
            f"jclouds.credential={CREDENTIAL}\n"
        )
        cp = classpath(BUNDLE, BUNDLES[BUNDLE])
        log = (self.root / "s3proxy.log").open("ab")
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             f"-Dlogback.configurationFile={LOGBACK}", "-cp", cp,
             "org.gaul.s3proxy.Main", "--properties", str(props)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            await_server(self.proc, self._answers, f"S3Proxy on {self.endpoint}", self.root / "s3proxy.log", timeout)
        except RuntimeError:
            self.stop()
            raise
        return self

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                pass
            urllib.request.urlopen(self.endpoint + "/", timeout=2)
        except urllib.error.HTTPError:
            return True  # an S3 error document (no credentials): it serves S3
        except OSError:
            return False
        return True

    def create_bucket(self, name: str) -> None:
        """A bucket, made the way the filesystem store keeps one (a directory), so no S3 client
        library is needed to make it."""
        (self.blobs / name).mkdir(parents=True, exist_ok=True)

    def objects(self, bucket: str) -> list[str]:
        """The keys in ``bucket``, from the store's directory."""
        base = self.blobs / bucket
        return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc, wait=10)
        self.proc = None

    def __enter__(self) -> S3Proxy:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    jars = classpath(BUNDLE, BUNDLES[BUNDLE]).split(os.pathsep)
    print(f"{BUNDLE}: {len(jars)} jars")
    sys.exit(0)
