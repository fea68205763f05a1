"""A real ZooKeeper 3.8 server (Debian ``zookeeper``) for tests and benchmarks.

Started from ``zkServer.sh start-foreground`` with a temp config on 127.0.0.1 and a free
port; the data dir is the one ZooKeeper itself writes (``<data_dir>/version-2/``).

Transaction logs are preallocated in 16 KiB steps (``preAllocSize=16``), not ZooKeeper's
64 MiB: the files keep their zero padding (what kaudit must read past) but a test that copies a
data dir copies kilobytes. With the default, every ``log.*`` is a 64 MiB sparse file that
``shutil.copy`` writes out densely: the fault corpus alone wrote 22 GB a run.
"""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from testkit.servers import await_server, stop_group

ZK_HOME = Path("/usr/share/zookeeper")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ruok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


@dataclass
class ZkServer:
    root: Path
    port: int
    extra_conf: str = ""
    proc: subprocess.Popen | None = None

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def start(self, timeout: float = 60) -> ZkServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.root / "zoo.cfg"
        cfg.write_text(
            "tickTime=2000\n"
            f"dataDir={self.data_dir}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=*\n"
            "extendedTypesEnabled=true\n"
            "autopurge.purgeInterval=0\n"
            "preAllocSize=16\n" + self.extra_conf
        )
        env = {**os.environ, "ZOO_LOG_DIR": str(self.root), "ZOOCFGDIR": str(self.root)}
        env["SERVER_JVMFLAGS"] = env.get("SERVER_JVMFLAGS", "") + " -Dzookeeper.extendedTypesEnabled=true -Xmx512m"
        self.proc = subprocess.Popen(
            [str(ZK_HOME / "bin" / "zkServer.sh"), "start-foreground", str(cfg)],
            stdout=open(self.root / "server.log", "wb"),
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            await_server(self.proc, lambda: _ruok(self.port), "ZooKeeper", self.root / "server.log", timeout)
        except RuntimeError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc, wait=20)
        self.proc = None


def start_zk(root: Path, extra_conf: str = "") -> ZkServer:
    return ZkServer(Path(root), free_port(), extra_conf).start()
