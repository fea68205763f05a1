"""The warehouse's ``hdfs://`` tables for pyiceberg, without a JVM: WebHDFS.

pyiceberg's own FileIO for ``hdfs://`` is PyArrow's ``HadoopFileSystem``, which loads the native
``libhdfs`` through JNI (a Hadoop installation and a JVM on the machine that runs the extract).
Instead kaudit speaks WebHDFS, the namenode's HTTP REST API (on by default in Hadoop 3:
``dfs.webhdfs.enabled``; https://hadoop.apache.org/docs/stable/hadoop-project-dist/hadoop-hdfs/WebHDFS.html):
a read or write asks the namenode, which redirects it to a datanode. ``WebHdfsFileIO`` is
pyiceberg's ``FsspecFileIO`` with ``hdfs://`` served by fsspec's WebHDFS client (``requests``), so
manifests, metadata and Parquet data files go through the same FileIO interface as on S3 and
PyArrow reads the data files through fsspec. The catalog opens it through the property
``py-io-impl`` (:meth:`pipelines.warehouse.iceberg.catalog.CatalogConfig.pyiceberg_properties`).
Spark does not use it: Spark reads and writes ``hdfs://`` through Hadoop's own client.

Where WebHDFS answers (:func:`settings`):

- ``KAUDIT_WEBHDFS``: the namenode's HTTP address, ``http://host:port`` (``https://`` for a
  namenode serving HTTPS only);
- else the host of the ``hdfs://`` URI and the port ``KAUDIT_WEBHDFS_PORT`` (default 9870,
  Hadoop 3's ``dfs.namenode.http-address``);
- the user is ``HADOOP_USER_NAME`` (as for Hadoop's own clients), else the login name: WebHDFS
  on a cluster without Kerberos takes the user as the ``user.name`` parameter.
"""

from __future__ import annotations

import getpass
import os
from urllib.parse import urlparse

from pyiceberg.io.fsspec import FsspecFileIO

from pipelines.errors import InputError

SCHEME = "hdfs"
DEFAULT_HTTP_PORT = 9870
URL = "webhdfs.url"  # pyiceberg properties of the FileIO
USER = "webhdfs.user"
IO_IMPL = f"{__name__}.WebHdfsFileIO"


def settings(location: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """The FileIO's properties for a warehouse at ``location`` (``hdfs://host[:port]/path``)."""
    env = os.environ if env is None else env
    url = env.get("KAUDIT_WEBHDFS")
    if not url:
        host = urlparse(location).hostname or "localhost"
        url = f"http://{host}:{env.get('KAUDIT_WEBHDFS_PORT') or DEFAULT_HTTP_PORT}"
    user = env.get("HADOOP_USER_NAME") or getpass.getuser()
    return {"py-io-impl": IO_IMPL, URL: url.rstrip("/"), USER: user}


def _filesystem(properties: dict[str, str]):
    from fsspec.implementations.webhdfs import WebHDFS

    parsed = urlparse(properties[URL])
    return WebHDFS(parsed.hostname, port=parsed.port or DEFAULT_HTTP_PORT, user=properties.get(USER),
                   use_https=parsed.scheme == "https")


class WebHdfsFileIO(FsspecFileIO):
    """pyiceberg's fsspec FileIO with ``hdfs://`` locations read and written over WebHDFS."""

    def __init__(self, properties):
        super().__init__(properties)
        self._scheme_to_fs[SCHEME] = _filesystem


def check(location: str, properties: dict[str, str]) -> None:
    """An :class:`InputError` (exit 1, one line naming ``location``) unless the namenode answers
    WebHDFS at the configured address."""
    import requests

    url = f"{properties[URL]}/webhdfs/v1/?op=GETFILESTATUS&user.name={properties.get(USER, '')}"
    where = f"--warehouse {location}: the namenode's WebHDFS at {properties[URL]}"
    try:
        resp = requests.get(url, timeout=10)
    except requests.RequestException as err:
        reason = type(err).__name__
        raise InputError(f"{where} does not answer ({reason}; set KAUDIT_WEBHDFS=http://host:port)") from None
    try:
        answer = resp.json() if resp.ok else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or "FileStatus" not in answer:
        raise InputError(f"{where} is not WebHDFS (HTTP {resp.status_code} for GETFILESTATUS /; "
                         "is dfs.webhdfs.enabled false?)")
