"""audit.yaml: loading, env expansion, validation messages, paths, the plan, CLI precedence."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
import yaml

from pipelines.config import AuditConfig, ZkBackup, ZkLive, load_config
from pipelines.context import RunContext
from pipelines.errors import UsageError
from pipelines.runner import plan, run_context, select
from pipelines.warehouse.warehouse import Warehouse

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "audit.yaml"
EXAMPLE_LIVE = REPO / "examples" / "audit-live.yaml"


def write(tmp_path: Path, text: str, name: str = "audit.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_example_loads_and_resolves(tmp_path):
    cfg = load_config(EXAMPLE, env={})  # runs as shipped: no variable to set
    (backup,) = cfg.sources.zookeeper
    assert isinstance(backup, ZkBackup)
    assert backup.data_dir == EXAMPLE.parent / "../demo-out/zookeeper"
    assert cfg.sources.kafka.log_dirs == [EXAMPLE.parent / "../demo-out/kafka-logs"]
    assert cfg.warehouse == EXAMPLE.parent / "../warehouse"
    assert cfg.assignors == {}
    assert cfg.spark.conf == {"spark.sql.shuffle.partitions": "8"}
    assert cfg.strict is False
    assert plan(cfg) == ["extract:zookeeper[0]", "extract:offsets", "extract:log-end", "build", "dbt", "validate",
                         "report"]
    moved = load_config(EXAMPLE, env={"KAUDIT_DEMO": "/data/demo"})
    assert moved.sources.zookeeper[0].data_dir == Path("/data/demo/zookeeper")


def test_live_example_loads_and_resolves():
    cfg = load_config(EXAMPLE_LIVE, env={"ZK_AUDIT_PASSWORD": "s3cret"})
    (live,) = cfg.sources.zookeeper
    assert isinstance(live, ZkLive)
    assert live.hosts == "zk1.example.net:2181,zk2.example.net:2181"
    assert live.auth == "digest:audit:s3cret"
    assert live.tls is not None and live.tls.key == Path("/etc/kaudit/zk.key")
    assert cfg.assignors == {"legacy-billing": "roundrobin"}
    assert cfg.strict is True
    assert cfg.sources.kraft.paths == [Path("/backups/kafka/controller-1/metadata")]
    assert plan(cfg)[:4] == ["extract:zookeeper[0]", "extract:offsets", "extract:log-end", "extract:kraft"]
    with pytest.raises(UsageError, match="environment variable ZK_AUDIT_PASSWORD is not set"):
        load_config(EXAMPLE_LIVE, env={})


def _documented_keys(node, prefix=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield (*prefix, k)
            yield from _documented_keys(v, (*prefix, k))
    elif isinstance(node, list):
        for item in node:
            yield from _documented_keys(item, prefix)


def _model_keys(model, prefix=()):
    from pydantic import BaseModel

    for name, field in model.model_fields.items():
        key = (*prefix, field.alias or name)
        yield key
        stack = [field.annotation]
        while stack:
            ann = stack.pop()
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                yield from _model_keys(ann, key)
            else:
                stack.extend(getattr(ann, "__args__", ()) or ())
                meta = getattr(ann, "__metadata__", None)
                if meta:
                    stack.append(getattr(ann, "__origin__", None))


def test_example_documents_every_key():
    documented = {k for example in (EXAMPLE, EXAMPLE_LIVE)
                  for k in _documented_keys(yaml.safe_load(example.read_text()))}
    keys = set(_model_keys(AuditConfig))
    # assignors and spark.conf are free-form maps: their entries are examples, not keys
    documented = {k for k in documented if k[:1] != ("assignors",) or len(k) == 1}
    documented = {k for k in documented if k[:2] != ("spark", "conf") or len(k) == 2}
    # clusters maps aliases to sources: an alias is an example, its keys are the model's
    documented = {k[:1] + k[2:] if k[:1] == ("clusters",) else k for k in documented}
    assert keys - documented == set()
    assert documented - keys == set()


def test_empty_config_is_all_defaults(tmp_path):
    cfg = load_config(write(tmp_path, ""))
    assert cfg.warehouse is None and cfg.run_id is None
    assert plan(cfg) == ["build", "dbt", "validate", "report"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sources:\n  zookeeper:\n    - hosts: x\n",
         "audit.yaml: sources.zookeeper[0].hosts: expected H:P[,H:P], got 'x'"),
        ("sources:\n  zookeeper:\n    - hosts: 'a:1,b'\n",
         "sources.zookeeper[0].hosts: expected H:P[,H:P], got 'a:1,b'"),
        ("sources:\n  zookeeper:\n    - hosts: 'a:70000'\n",
         "sources.zookeeper[0].hosts: expected H:P[,H:P], got 'a:70000'"),
        ("sources:\n  zookeeper:\n    - {hosts: 'a:1', chroot: kafka}\n",
         "sources.zookeeper[0].chroot: expected an absolute znode path"),
        ("sources:\n  zookeeper:\n    - {hosts: 'a:1', auth: digest}\n",
         "sources.zookeeper[0].auth: expected SCHEME:CRED"),
        ("sources:\n  zookeeper:\n    - {hosts: 'a:1', tls: {cert: c.pem}}\n",
         "sources.zookeeper[0].tls: cert and key go together"),
        ("sources:\n  zookeeper:\n    - {hosts: 'a:1', data_dir: d}\n",
         "sources.zookeeper[0]: give either hosts (live) or data_dir (backup)"),
        ("sources:\n  zookeeper:\n    - {chroot: /x}\n",
         "sources.zookeeper[0]: needs hosts (a live ensemble) or data_dir"),
        ("sources:\n  zookeeper:\n    - {data_dir: d, at_zxid: 0xzz}\n",
         "sources.zookeeper[0].at_zxid: expected a zxid (decimal or 0x-hex), got '0xzz'"),
        ("sources:\n  zookeeper:\n    - {data_dir: d, at_zxid: -1}\n", "sources.zookeeper[0].at_zxid: expected a zxid"),
        ("sources:\n  zookeeper:\n    - {hosts: 'a:1'}\n    - {hosts: 'b:1'}\n",
         "sources.zookeeper[1]: a run audits one cluster"),
        ("sources:\n  zookeeper: [{data_dir: a}, {data_dir: b}]\n",
         "sources.zookeeper[1]: a run audits one cluster: at most one data-dir backup"),
        ("sources:\n  kafka: {log_dir: [a]}\n",
         "sources.kafka.log_dir: unknown key (allowed: log_dirs, consumer_offsets, offsets_file, topic_configs, "
         "workers)"),
        ("sources:\n  kafka: {workers: 0}\n",
         "sources.kafka.workers: input should be greater than or equal to 1, got 0"),
        ("sources:\n  kafka: {log_dirs: a}\n", "sources.kafka.log_dirs: input should be a valid list, got 'a'"),
        ("source: {}\n",
         "source: unknown key (allowed: warehouse, run_id, steps, sources, clusters, spark, dbt, assignors, history, "
         "validate)"),
        ("spark: {master: 'foo'}\n",
         "spark.master: expected local[*], local[N], spark://H:P, yarn or k8s://URL, got 'foo'"),
        ("spark: {conf: {executor.memory: 2g}}\n",
         "spark.conf: keys are Spark properties (spark.*), got 'executor.memory'"),
        ("assignors: {g1: ranged}\n", "assignors.g1: input should be 'range' or 'roundrobin', got 'ranged'"),
        ("steps: [extract, bild]\n",
         "steps[1]: input should be 'extract', 'build', 'dbt', 'validate' or 'report', got 'bild'"),
        ("steps: []\n", "steps: name at least one of extract, build, dbt, validate, report"),
        ("steps: [build, build]\n", "steps: 'build' listed twice"),
        ("run_id: 'a/b'\n", "run_id: a run id is letters, digits, '-' and '_' only"),
        ("run_id: 'v1.2'\n", "run_id: a run id is letters, digits, '-' and '_' only"),
        ("sources: {kraft: {paths: [m], at_offset: 3, at_time: '2026-01-01'}}\n",
         "sources.kraft: give at_offset or at_time, not both"),
        ("sources: {kraft: {paths: [m], at_time: 'noon'}}\n",
         "sources.kraft.at_time: 'noon' is neither an ISO 8601 time nor epoch milliseconds"),
        ("sources: {kraft: {paths: [m], at_offset: -1}}\n",
         "sources.kraft.at_offset: input should be greater than or equal to 0"),
        ("validate: {strict: maybe}\n",
         "validate.strict: input should be a valid boolean, unable to interpret input, got 'maybe'"),
        ("- a\n- b\n", "audit.yaml: expected a mapping of keys at the top, got list"),
        ("sources: [\n", "audit.yaml: line 2, column 1: invalid YAML"),
        ("sources:\n  zookeeper:\n    - {hosts: 'a:1', auth: 'digest:u:${NOPE_UNSET_VAR}'}\n",
         "audit.yaml: sources.zookeeper[0].auth: environment variable NOPE_UNSET_VAR is not set"),
        ("warehouse: '${BROKEN'\n", "warehouse: malformed ${...} reference"),
    ],
)
def test_bad_config_names_key_and_problem(tmp_path, text, message):
    with pytest.raises(UsageError) as err:
        load_config(write(tmp_path, text), env={})
    assert message in str(err.value)
    assert str(err.value).startswith("audit.yaml: ")
    assert "\n" not in str(err.value)
    assert err.value.exit_code == 2


def test_history_keys_reach_the_build_rule(tmp_path):
    from pipelines.settle import SettleRule

    assert load_config(write(tmp_path, "{}\n")).history.rule == SettleRule()
    cfg = load_config(write(tmp_path, "history: {settle_window_ms: 500, stuck_limit_ms: 2000}\n"))
    assert cfg.history.rule == SettleRule(500, 2000)
    assert cfg.history.rule.args() == ["--settle-window-ms=500", "--stuck-limit-ms=2000"]
    for bad, says in (("history: {settle_window_ms: -1}\n", "history.settle_window_ms"),
                      ("history: {settle_window_ms: 9000, stuck_limit_ms: 8000}\n", "below settle_window_ms"),
                      ("history: {window: 1}\n", "history.window")):
        with pytest.raises(UsageError, match=says):
            load_config(write(tmp_path, bad))


def test_build_settle_options_are_checked_before_any_work(tmp_path, capsys):
    from pipelines.cli import main

    for args, says in ((["--settle-window-ms", "soon"], "--settle-window-ms 'soon'"),
                       (["--settle-window-ms", "9000", "--stuck-limit-ms", "100"], "below --settle-window-ms")):
        with pytest.raises(SystemExit) as done:
            main(["--warehouse", str(tmp_path / "wh"), "build", *args])
        err = capsys.readouterr().err.strip()
        assert done.value.code == 2 and says in err and len(err.splitlines()) == 1, err
        assert not (tmp_path / "wh").exists()


def test_missing_config_file(tmp_path):
    with pytest.raises(UsageError, match="no such config file"):
        load_config(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    ("value", "env", "expected"),
    [
        ("digest:u:${PW}", {"PW": "x y"}, "digest:u:x y"),
        ("digest:u:${PW:-fallback}", {}, "digest:u:fallback"),
        ("digest:u:${PW:-fallback}", {"PW": ""}, "digest:u:fallback"),
        ("digest:${U}:${PW}", {"U": "a", "PW": "b"}, "digest:a:b"),
        ("digest:u:$${PW}", {"PW": "b"}, "digest:u:${PW}"),
    ],
)
def test_env_expansion(tmp_path, value, env, expected):
    path = write(tmp_path, f"sources:\n  zookeeper:\n    - hosts: '127.0.0.1:2181'\n      auth: '{value}'\n")
    assert load_config(path, env=env).sources.zookeeper[0].auth == expected


def test_relative_paths_resolve_against_config_dir(tmp_path):
    sub = tmp_path / "conf"
    sub.mkdir()
    path = write(
        sub,
        """
        warehouse: ../wh
        sources:
          zookeeper: [{data_dir: zk, at_zxid: "0x1f"}]
          kafka: {log_dirs: [/abs/k, rel/k], offsets_file: ends.txt, topic_configs: topics.properties}
        """,
    )
    cfg = load_config(path)
    assert cfg.warehouse == sub / "../wh"
    assert cfg.sources.zookeeper[0].data_dir == sub / "zk"
    assert cfg.sources.zookeeper[0].at_zxid == 31
    assert cfg.sources.kafka.log_dirs == [Path("/abs/k"), sub / "rel/k"]
    assert cfg.sources.kafka.offsets_file == sub / "ends.txt"
    assert cfg.sources.kafka.topic_configs == sub / "topics.properties"


def test_plan_units_follow_sources_and_steps(tmp_path):
    cfg = load_config(
        write(
            tmp_path,
            """
            steps: [report, extract, build]
            sources:
              kafka: {offsets_file: ends.txt}
            """,
        )
    )
    assert plan(cfg) == ["extract:log-end", "build", "report"]
    cfg = load_config(write(tmp_path, "sources:\n  kafka: {consumer_offsets: [a.log]}\nsteps: [extract]\n"))
    assert plan(cfg) == ["extract:offsets"]
    cfg = load_config(write(tmp_path, "sources:\n  kafka: {topic_configs: t.properties}\nsteps: [extract]\n"))
    assert plan(cfg) == ["extract:log-end"]


def test_select_units():
    units = ["extract:zookeeper[0]", "extract:offsets", "build", "dbt"]
    assert select(units, []) == units
    assert select(units, ["extract"]) == ["extract:zookeeper[0]", "extract:offsets"]
    assert select(units, ["dbt", "extract:offsets"]) == ["extract:offsets", "dbt"]
    with pytest.raises(UsageError, match="--only 'report': not a unit of this config"):
        select(units, ["report"])


def test_command_line_wins_over_config(tmp_path):
    cfg = load_config(write(tmp_path, "warehouse: wh\nrun_id: r1\nspark: {master: 'spark://h:7077'}\n"))
    base = RunContext(warehouse=Warehouse(tmp_path / "cli"), run_id="cli-run", spark_master=None)
    ctx, _ = run_context(cfg, base)
    assert (ctx.warehouse.root, ctx.run_id, ctx.spark_master) == (tmp_path / "wh", "r1", "spark://h:7077")
    ctx, _ = run_context(cfg, base, frozenset({"warehouse", "run_id", "spark_master"}))
    assert (ctx.warehouse.root, ctx.run_id, ctx.spark_master) == (tmp_path / "cli", "cli-run", None)


def test_spark_and_dbt_settings_travel_in_the_run_context(tmp_path, monkeypatch):
    """spark.conf, spark.submit and dbt.target reach the steps in the RunContext, not through the
    process environment; the command line's dbt target (KAUDIT_DBT_TARGET) holds unless the
    config names one."""
    monkeypatch.delenv("KAUDIT_DBT_TARGET", raising=False)
    spark = "spark: {conf: {spark.executor.memory: 2g}, submit: true}\n"
    cfg = load_config(write(tmp_path, "warehouse: wh\nrun_id: r1\n" + spark + "dbt: {target: thrift}\n"))
    base = RunContext(warehouse=Warehouse(tmp_path / "cli"), run_id=None, dbt_target="elsewhere")
    ctx, _ = run_context(cfg, base)
    assert (ctx.spark_conf, ctx.spark_submit, ctx.dbt_target) == ({"spark.executor.memory": "2g"}, True, "thrift")
    assert "KAUDIT_DBT_TARGET" not in os.environ
    ctx, _ = run_context(load_config(write(tmp_path, "warehouse: wh\nrun_id: r1\n")), base)
    assert (ctx.spark_conf, ctx.spark_submit, ctx.dbt_target) == ({}, None, "elsewhere")


def test_cli_bad_config_exits_2_with_one_line(tmp_path, capsys):
    from pipelines.cli import main

    path = write(tmp_path, "sources:\n  zookeeper:\n    - hosts: x\n")
    with pytest.raises(SystemExit) as done:
        main(["run", "--config", str(path)])
    assert done.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "kaudit: audit.yaml: sources.zookeeper[0].hosts: expected H:P[,H:P], got 'x'"
    )


def test_cli_plan_json(tmp_path, capsys):
    from pipelines.cli import main

    path = write(tmp_path, "warehouse: wh\nsources:\n  kafka: {log_dirs: [k]}\nassignors: {g: roundrobin}\n")
    with pytest.raises(SystemExit) as done:
        main(["--run-id", "r7", "run", "--config", str(path), "--plan"])
    assert done.value.code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["run_id"] == "r7" and out["warehouse"] == str(tmp_path / "wh")
    assert out["extract_units"] == ["extract:offsets", "extract:log-end"]
    assert out["spark_jobs"]["build"]["application"].endswith("pipelines/jobs/build_core.py")
    warehouse = ["--warehouse", (tmp_path / "wh").as_uri(), "--catalog", f"sqlite:///{tmp_path / 'wh.catalog.db'}",
                 "--warehouse-local", str(tmp_path / "wh")]
    assert out["spark_jobs"]["build"]["application_args"] == [
        *warehouse, "--run-id", "r7", "--assignor=g=roundrobin", "--settle-window-ms=8000", "--stuck-limit-ms=60000",
    ]
    assert out["spark_jobs"]["dbt"]["application_args"] == [*warehouse, "--run-id", "r7"]


def test_cli_plan_json_passes_the_dbt_target_as_an_argument(tmp_path, capsys, monkeypatch):
    from pipelines.cli import main

    monkeypatch.delenv("KAUDIT_DBT_TARGET", raising=False)
    path = write(tmp_path, "warehouse: wh\ndbt: {target: thrift}\nspark: {conf: {spark.executor.cores: 2}}\n")
    with pytest.raises(SystemExit) as done:
        main(["--run-id", "r7", "run", "--config", str(path), "--plan"])
    assert done.value.code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["spark_jobs"]["dbt"]["application_args"][-2:] == ["--target", "thrift"]
    assert out["spark_conf"]["spark.executor.cores"] == "2" and "env" not in out
    assert out["spark_conf"]["spark.sql.catalog.kaudit"] == "org.apache.iceberg.spark.SparkCatalog"  # the warehouse's
