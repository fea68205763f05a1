"""``audit.yaml``: the one config file of ``kaudit run`` and the Airflow DAG.

Every key is documented in ``examples/audit.yaml``. Loading does, in order:

1. parse the YAML (a syntax error names the line and column);
2. expand ``${VAR}`` / ``${VAR:-default}`` in every string value from the environment (``$${``
   is a literal ``${``), so secrets such as ZooKeeper auth need not sit in the file;
3. validate against the models below (unknown keys are errors, not ignored);
4. resolve relative paths against the config file's directory.

Any problem raises :class:`pipelines.errors.UsageError` (exit 2) naming the file, the key path
and the problem, e.g. ``audit.yaml: sources.zookeeper[0].hosts: expected H:P[,H:P], got 'x'``.

What ``kaudit run`` and the Airflow DAG do with a config (its plan of units, the run's context)
is :mod:`pipelines.runner`'s business; this module is the file's schema and its loading only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from pipelines.errors import UsageError
from pipelines.settle import DEFAULT_SETTLE_WINDOW_MS, DEFAULT_STUCK_LIMIT_MS, SettleRule
from pipelines.warehouse.runs import RUN_ID, RUN_ID_RULE
from pipelines.warehouse.tables import ZOOKEEPER_ASSIGNORS
from pipelines.zookeeper.hosts import check_hosts

STEPS = ("extract", "build", "dbt", "validate", "report")

_ENV_REF = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_BAD_REF = re.compile(r"(?<!\$)\$\{(?![A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\})")
_SPARK_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|yarn|spark://.+|k8s://.+|mesos://.+)$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)


class ZkTls(_Model):
    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    @model_validator(mode="after")
    def _pair(self) -> ZkTls:
        if (self.cert is None) != (self.key is None):
            raise ValueError("cert and key go together: give both or neither")
        return self


class ZkLive(_Model):
    """A live ensemble, walked read-only (``kaudit extract zk``)."""

    hosts: str
    chroot: str | None = None
    auth: str | None = None
    tls: ZkTls | None = None

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, v: str) -> str:
        if "/" in v:
            raise ValueError(f"expected H:P[,H:P] (a chroot goes in its own key), got {v!r}")
        return check_hosts(v)

    @field_validator("chroot")
    @classmethod
    def _chroot(cls, v: str | None) -> str | None:
        if v is not None and (not v.startswith("/") or "//" in v or (len(v) > 1 and v.endswith("/"))):
            raise ValueError(f"expected an absolute znode path like /kafka, got {v!r}")
        return v

    @field_validator("auth")
    @classmethod
    def _auth(cls, v: str | None) -> str | None:
        if v is not None:
            scheme, sep, cred = v.partition(":")
            if not sep or not scheme or not cred:
                raise ValueError("expected SCHEME:CRED, e.g. digest:user:${ZK_PASSWORD}")
        return v


class ZkBackup(_Model):
    """A ZooKeeper data dir (or its version-2/, or one snapshot file), read offline."""

    data_dir: Path
    at_zxid: int | None = None

    @field_validator("at_zxid", mode="before")
    @classmethod
    def _zxid(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                v = int(v, 0)
            except ValueError:
                raise ValueError(f"expected a zxid (decimal or 0x-hex), got {v!r}") from None
        if isinstance(v, bool) or (isinstance(v, int) and v < 0):
            raise ValueError(f"expected a zxid (decimal or 0x-hex), got {v!r}")
        return v


class KafkaSource(_Model):
    log_dirs: list[Path] = Field(default_factory=list)
    consumer_offsets: list[Path] = Field(default_factory=list)
    offsets_file: Path | None = None
    topic_configs: Path | None = None  # topic:config=value lines (retention when the metadata lacks it)
    workers: Annotated[int, Field(ge=1)] | None = None


class KraftSource(_Model):
    """A KRaft metadata log (``kaudit extract kraft``): ``__cluster_metadata-0`` dirs, log dirs
    holding one, or ``.log``/``.checkpoint`` files; replayed to the end, or to ``at_offset`` or
    ``at_time`` (ISO 8601 or epoch ms)."""

    paths: list[Path] = Field(default_factory=list)
    at_offset: Annotated[int, Field(ge=0)] | None = None
    at_time: str | None = None

    @field_validator("at_time")
    @classmethod
    def _time(cls, v: str | None) -> str | None:
        if v is not None:
            from pipelines.kraft.extract import parse_time_ms

            parse_time_ms(v)
        return v

    @model_validator(mode="after")
    def _one_target(self) -> KraftSource:
        if self.at_offset is not None and self.at_time is not None:
            raise ValueError("give at_offset or at_time, not both")
        return self


def _zk_tag(v: Any) -> str | None:
    if isinstance(v, (ZkLive, ZkBackup)):
        return "live" if isinstance(v, ZkLive) else "backup"
    return "live" if isinstance(v, dict) and "hosts" in v else "backup"


ZkSource = Annotated[Annotated[ZkLive, Tag("live")] | Annotated[ZkBackup, Tag("backup")], Discriminator(_zk_tag)]


class Sources(_Model):
    zookeeper: list[ZkSource] = Field(default_factory=list)
    kafka: KafkaSource = Field(default_factory=KafkaSource)
    kraft: KraftSource = Field(default_factory=KraftSource)

    @field_validator("zookeeper", mode="before")
    @classmethod
    def _zk_kind(cls, v: Any) -> Any:
        # Pick the model from the keys, so errors speak of one kind, not of a union.
        if isinstance(v, list):
            out = []
            for i, item in enumerate(v):
                if isinstance(item, dict) and "hosts" in item and "data_dir" in item:
                    raise ValueError(f"[{i}]: give either hosts (live) or data_dir (backup), not both")
                if isinstance(item, dict) and "hosts" not in item and "data_dir" not in item:
                    raise ValueError(f"[{i}]: needs hosts (a live ensemble) or data_dir (a backup)")
                out.append(item)
            return out
        return v

    @model_validator(mode="after")
    def _one_of_each(self) -> Sources:
        # raw/znodes keeps one file per step in a run: a run audits one cluster.
        live = [i for i, z in enumerate(self.zookeeper) if isinstance(z, ZkLive)]
        backups = [i for i, z in enumerate(self.zookeeper) if isinstance(z, ZkBackup)]
        for kind, idx in (("live ensemble", live), ("data-dir backup", backups)):
            if len(idx) > 1:
                raise ValueError(
                    f"zookeeper[{idx[1]}]: a run audits one cluster: at most one {kind} per config "
                    "(use a config, or a run id, per cluster)"
                )
        return self


class ClusterSources(_Model):
    """The sources of one more cluster of the run (``clusters.<alias>``): its tables go under
    ``<warehouse>/clusters/<alias>/`` (docs/clusters.md). ``mirror_maker``: log dirs (or partition
    dirs) holding MirrorMaker 2's offset-sync or checkpoint topics (``kaudit extract mm2``)."""

    kafka: KafkaSource = Field(default_factory=KafkaSource)
    mirror_maker: list[Path] = Field(default_factory=list)


class SparkConfig(_Model):
    master: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)
    submit: bool | None = None  # None: spark-submit for every non-local master

    @field_validator("master")
    @classmethod
    def _master(cls, v: str | None) -> str | None:
        if v is not None and not _SPARK_MASTER.match(v):
            raise ValueError(f"expected local[*], local[N], spark://H:P, yarn or k8s://URL, got {v!r}")
        return v

    @field_validator("conf", mode="before")
    @classmethod
    def _conf(cls, v: Any) -> Any:
        if isinstance(v, dict):
            for k, val in v.items():
                if not isinstance(k, str) or not k.startswith("spark."):
                    raise ValueError(f"keys are Spark properties (spark.*), got {k!r}")
                if isinstance(val, (dict, list)) or val is None:
                    raise ValueError(f"{k}: expected a scalar value, got {val!r}")
            return {k: str(val).lower() if isinstance(val, bool) else str(val) for k, val in v.items()}
        return v


class DbtConfig(_Model):
    target: str | None = None


class ValidateConfig(_Model):
    strict: bool = False


class HistoryConfig(_Model):
    """The rebalance history's settle rule (:mod:`pipelines.settle`), in milliseconds."""

    settle_window_ms: int = Field(default=DEFAULT_SETTLE_WINDOW_MS, ge=0)
    stuck_limit_ms: int = Field(default=DEFAULT_STUCK_LIMIT_MS, ge=0)

    @model_validator(mode="after")
    def _order(self) -> HistoryConfig:
        if self.stuck_limit_ms < self.settle_window_ms:
            raise ValueError(f"stuck_limit_ms {self.stuck_limit_ms} is below settle_window_ms "
                             f"{self.settle_window_ms}: a rebalance would be stuck before it could settle")
        return self

    @property
    def rule(self) -> SettleRule:
        return SettleRule(self.settle_window_ms, self.stuck_limit_ms)


class AuditConfig(_Model):
    warehouse: Path | None = None
    run_id: str | None = None
    steps: list[Literal[STEPS]] = Field(default_factory=lambda: list(STEPS))
    sources: Sources = Field(default_factory=Sources)
    clusters: dict[str, ClusterSources] = Field(default_factory=dict)  # alias -> sources of more clusters
    spark: SparkConfig = Field(default_factory=SparkConfig)
    dbt: DbtConfig = Field(default_factory=DbtConfig)
    assignors: dict[str, Literal[ZOOKEEPER_ASSIGNORS]] = Field(default_factory=dict)
    history: HistoryConfig = Field(default_factory=HistoryConfig)
    validate_: ValidateConfig = Field(default_factory=ValidateConfig, alias="validate")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str | None) -> str | None:
        if v is not None and (not isinstance(v, str) or not RUN_ID.match(v)):
            raise ValueError(f"a run id is {RUN_ID_RULE}, got {v!r}")
        return v

    @field_validator("clusters")
    @classmethod
    def _aliases(cls, v: dict[str, ClusterSources]) -> dict[str, ClusterSources]:
        from pipelines.clusters import ALIAS_RULE, DEFAULT_ALIAS

        for alias in v:
            if not RUN_ID.match(alias) or alias == DEFAULT_ALIAS:
                raise ValueError(f"a cluster alias is {ALIAS_RULE} and not {DEFAULT_ALIAS!r} (the sources: "
                                 f"section's cluster), got {alias!r}")
        return v

    @field_validator("steps")
    @classmethod
    def _steps(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError(f"name at least one of {', '.join(STEPS)}")
        dup = {s for s in v if v.count(s) > 1}
        if dup:
            raise ValueError(f"{sorted(dup)[0]!r} listed twice")
        return [s for s in STEPS if s in v]  # always run in pipeline order

    @property
    def strict(self) -> bool:
        return self.validate_.strict


# --- loading ---------------------------------------------------------------------------------


def load_config(path: str | os.PathLike, env: dict[str, str] | None = None) -> AuditConfig:
    """Parse, expand, validate and resolve ``path``; :class:`UsageError` on any problem."""
    path = Path(path)
    name = path.name
    env = dict(os.environ) if env is None else env
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{path}: cannot read the config: {err}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise UsageError(f"{name}: {where}invalid YAML: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{name}: expected a mapping of keys at the top, got {type(data).__name__}")
    data = _expand(data, env, (), name)
    try:
        cfg = AuditConfig.model_validate(data)
    except ValidationError as err:
        raise UsageError(f"{name}: {_first_error(err)}") from None
    return _resolve_paths(cfg, path.parent.absolute())


def _expand(value: Any, env: dict[str, str], loc: tuple, name: str) -> Any:
    if isinstance(value, dict):
        return {k: _expand(v, env, (*loc, k), name) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, env, (*loc, i), name) for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def sub(m: re.Match) -> str:
        if m.group(0) == "$${":
            return "${"
        var, default = m.group(1), m.group(2)
        if var in env and env[var] != "":
            return env[var]
        if default is not None:
            return default
        raise UsageError(f"{name}: {_loc(loc)}: environment variable {var} is not set")

    if _BAD_REF.search(value):
        raise UsageError(f"{name}: {_loc(loc)}: malformed ${{...}} reference in {value!r} "
                         "(use ${VAR} or ${VAR:-default})")
    return _ENV_REF.sub(sub, value)


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top)"


# parts of pydantic's error locations that name a union member, not a key of the file
_UNION_TAGS = {"live", "backup"}
_UNION_PREFIXES = ("function-", "constrained-", "json-")


def _first_error(err: ValidationError) -> str:
    e = err.errors(include_url=False)[0]
    loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and (p in _UNION_TAGS or p.startswith(_UNION_PREFIXES))))
    kind, msg, given = e["type"], e["msg"], e.get("input")
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return f"{_loc(loc)}: unknown key{hint}"
    if kind == "missing":
        return f"{_loc(loc)}: required key is missing"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
        # errors raised for an item of a list carry its index in the message: fold it into the path
        m = re.match(r"^\[(\d+)\]: (.*)$", msg)
        if m:
            return f"{_loc((*loc, int(m.group(1))))}: {m.group(2)}"
        m = re.match(r"^(\w+)\[(\d+)\]: (.*)$", msg)
        if m:
            return f"{_loc((*loc, m.group(1), int(m.group(2))))}: {m.group(3)}"
        return f"{_loc(loc)}: {msg}"
    return f"{_loc(loc)}: {msg[0].lower()}{msg[1:]}, got {given!r}"


def _allowed_keys(parent: tuple) -> list[str]:
    model: Any = AuditConfig
    for part in parent:
        if isinstance(part, int):
            continue
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return []
        ann = field.annotation
        model = next((a for a in _model_args(ann)), None)
        if model is None:
            return []
    return [f.alias or n for n, f in model.model_fields.items()]


def _model_args(ann: Any):
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        yield ann
        return
    for a in getattr(ann, "__args__", ()) or ():
        yield from _model_args(a)


def _resolve_paths(cfg: AuditConfig, base: Path) -> AuditConfig:
    def p(x: Path | None) -> Path | None:
        return None if x is None else (x.expanduser() if x.expanduser().is_absolute() else base / x.expanduser())

    zk: list[ZkLive | ZkBackup] = []
    for z in cfg.sources.zookeeper:
        if isinstance(z, ZkBackup):
            zk.append(z.model_copy(update={"data_dir": p(z.data_dir)}))
        elif z.tls is not None:
            tls = z.tls.model_copy(update={k: p(getattr(z.tls, k)) for k in ("ca", "cert", "key")})
            zk.append(z.model_copy(update={"tls": tls}))
        else:
            zk.append(z)
    def kafka_paths(k: KafkaSource) -> KafkaSource:
        return k.model_copy(
            update={
                "log_dirs": [p(d) for d in k.log_dirs],
                "consumer_offsets": [p(d) for d in k.consumer_offsets],
                "offsets_file": p(k.offsets_file),
                "topic_configs": p(k.topic_configs),
            }
        )

    kafka = kafka_paths(cfg.sources.kafka)
    kraft = cfg.sources.kraft.model_copy(update={"paths": [p(d) for d in cfg.sources.kraft.paths]})
    clusters = {a: c.model_copy(update={"kafka": kafka_paths(c.kafka), "mirror_maker": [p(d) for d in c.mirror_maker]})
                for a, c in cfg.clusters.items()}
    return cfg.model_copy(
        update={
            "warehouse": p(cfg.warehouse),
            "sources": cfg.sources.model_copy(update={"zookeeper": zk, "kafka": kafka, "kraft": kraft}),
            "clusters": clusters,
        }
    )
