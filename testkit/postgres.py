"""A real PostgreSQL server for tests (Debian's ``postgresql`` package, `make test` installs it):
a fresh cluster (``initdb``) in a new directory under the system's temporary directory,
listening on 127.0.0.1 and a free port only, its socket in that directory, stopped
(``pg_ctl stop``) and removed at the end.

PostgreSQL refuses to run as root: as root, the cluster belongs to the package's ``postgres``
user and its commands run as that user (``runuser``); that is why the directory is not a
test's ``tmp_path``, which only root may enter. The one role, ``kaudit``, logs in without a
password (``trust``, loopback only).

    with Postgres().start() as pg:
        pg.uri          # postgresql://kaudit@127.0.0.1:<port>/postgres
        pg.sql("select count(*) from iceberg_tables")
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from testkit.zk_server import free_port

ROLE, DATABASE = "kaudit", "postgres"


class PostgresMissing(RuntimeError):
    """Debian's PostgreSQL server is not installed (`make test` installs it)."""


def bin_dir() -> Path:
    """The server's binaries (``/usr/lib/postgresql/<major>/bin``), the newest major installed."""
    majors = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if not majors:
        raise PostgresMissing("PostgreSQL is not installed (Debian: apt-get install postgresql; `make test` does)")
    return majors[-1].parent


@dataclass
class Postgres:
    root: Path | None = None
    port: int = 0

    @property
    def uri(self) -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = [str(a) for a in args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=120)

    def start(self) -> Postgres:
        bins = bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="kaudit-postgres-"))
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self.port = self.port or free_port()
        self._run(bins / "initdb", "-D", self.data, "-U", ROLE, "--auth=trust", "-E", "UTF8", "--no-sync")
        self._run(bins / "pg_ctl", "-D", self.data, "-l", self.root / "server.log", "-w", "-t", "60", "start",
                  "-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off")
        return self

    def sql(self, query: str) -> list[list[str]]:
        """``query``'s rows as psql prints them unaligned (``|`` between fields)."""
        done = self._run(bin_dir() / "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", ROLE, "-d", DATABASE,
                         "-A", "-t", "-c", query)
        return [line.split("|") for line in done.stdout.splitlines() if line]

    def stop(self) -> None:
        if self.root is None:
            return
        if self.data.is_dir():
            self._run(bin_dir() / "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> Postgres:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
