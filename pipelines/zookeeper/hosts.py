"""The one rule for a ZooKeeper connect string, checked before any connection is tried (the
CLI's ``--hosts`` and the config's ``sources.zookeeper[N].hosts``)."""

from __future__ import annotations

import re

_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


def check_hosts(value: str) -> str:
    """``H:P[,H:P]`` (IPv6 as ``[::1]:2181``; a kazoo ``/chroot`` suffix is kept), spaces
    around commas dropped; :class:`ValueError` naming what was expected otherwise."""
    hosts, slash, chroot = value.partition("/")
    parts = [p.strip() for p in hosts.split(",")]
    for p in parts:
        m = _HOST_PORT.match(p)
        if not m or not 0 < int(m.group(2)) < 65536:
            raise ValueError(f"expected H:P[,H:P], got {value!r}")
    return ",".join(parts) + slash + chroot
