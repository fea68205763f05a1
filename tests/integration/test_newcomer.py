"""The README's steps as a new user types them: no ``--run-id``, no options, output piped (as in
CI or Airflow). Inputs: the demo cluster's files (a data dir written by a real ZooKeeper 3.8,
``__consumer_offsets`` and data-topic segments written with kafka-python), whose planted faults
``faults.json`` lists as the generator made them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.warehouse.warehouse import Warehouse

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "pipelines" / "demo"
README_STEPS = [
    ["extract", "zk-snapshot", "zookeeper"],
    ["extract", "offsets", "kafka-logs"],
    ["extract", "log-end", "kafka-logs"],
    ["build"],
    ["validate"],
    ["report"],
]
# what a JVM, log4j or a Java stack trace prints; none of it may reach the user by default
JVM_NOISE = re.compile(
    r"WARN|ERROR|Exception|log4j|incubator|NativeCodeLoader|SLF4J|setLogLevel|^\s+at [\w.$]+\(|^\d\d/\d\d/\d\d ",
    re.MULTILINE,
)
RUN_LINE = re.compile(r"^run (\S+)(?: \((.*)\))?$")


def kaudit(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("KAUDIT_SPARK_MASTER",)}
    return subprocess.run(
        [sys.executable, "-m", "pipelines", *args], cwd=cwd, capture_output=True, text=True, timeout=900, env=env
    )


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory):
    """The README's steps, in a fresh directory holding the cluster's files."""
    home = tmp_path_factory.mktemp("newcomer")
    shutil.copytree(DEMO / "data" / "zookeeper", home / "zookeeper")
    shutil.copytree(DEMO / "data" / "kafka-logs", home / "kafka-logs")
    outputs = []
    for step in README_STEPS:
        proc = kaudit(home, *step)
        outputs.append((step, proc))
        assert proc.returncode == 0, f"{' '.join(step)}: exit {proc.returncode}\n{proc.stderr[-4000:]}"
    return home, outputs


@pytest.mark.timeout(1500)
def test_every_step_names_one_run_on_its_first_line(newcomer):
    home, outputs = newcomer
    firsts = [RUN_LINE.match(proc.stderr.splitlines()[0]) for _, proc in outputs]
    assert all(firsts), [proc.stderr.splitlines()[:1] for _, proc in outputs]
    run_ids = {m.group(1) for m in firsts}
    assert len(run_ids) == 1, run_ids
    hows = [m.group(2) or "" for m in firsts]
    assert hows[0] == "new"
    assert all(h.startswith("continued") for h in hows[1:3]), hows
    assert hows[3:] == ["the newest run"] * 3
    # one run in the warehouse, holding every extract
    (run_id,) = run_ids
    wh = home / "warehouse"
    assert sorted(p.name for p in (wh / "runs").iterdir()) == [f"run_id={run_id}"]
    for table in ("znodes", "offset_commits", "group_metadata", "log_end_offsets", "quarantine"):
        assert Warehouse(wh).run_ids(f"raw/{table}") == [run_id], table


def test_the_report_counts_the_planted_findings(newcomer):
    home, outputs = newcomer
    manifest = json.loads((DEMO / "faults.json").read_text())
    expected = manifest["expected"]
    (report_dir,) = (home / "warehouse" / "reports").iterdir()
    summary = json.loads((report_dir / "summary.json").read_text())
    for source, statuses in expected["assignment"].items():
        assert {s: summary["assignment"][source].get(s, 0) for s in statuses} == statuses, source
    assert summary["offset_regressions"] == expected["offset_regressions"]
    assert summary["inputs"]["quarantined"] == expected["quarantined"]
    assert summary["expectations"]["evaluated"] > 0
    assert str(report_dir / "index.html") in outputs[-1][1].stderr


def test_build_and_validate_print_no_jvm_lines(newcomer):
    _, outputs = newcomer
    for step, proc in outputs:
        noise = JVM_NOISE.findall(proc.stderr + proc.stdout)
        assert not noise, f"{' '.join(step)} printed JVM output: {noise[:5]}\n{proc.stderr[:3000]}"
        # piped output is not hard-wrapped: every path printed is whole on its line
        assert all(len(line) < 10_000 for line in proc.stderr.splitlines())


def test_the_extract_lists_what_it_quarantined(newcomer):
    _, outputs = newcomer
    q = json.loads((DEMO / "faults.json").read_text())["quarantine"][0]
    lines = outputs[1][1].stderr.splitlines()
    summary = r"^offsets: 1 part\(s\) quarantined in raw/quarantine: 1 CrcMismatch$"
    assert any(re.match(summary, ln) for ln in lines), lines
    named = f"kafka-logs/{q['file']}:{q['byte_offset']}: CrcMismatch: "
    assert any(ln.strip().startswith(named) for ln in lines), lines


QUERIES = r'''
import ast, json, re, sys
from pathlib import Path

text = Path(sys.argv[1]).read_text().split("## Querying the marts", 1)[1]
blocks = re.findall(r"```(python|sql)\n(.*?)```", text, re.S)
results = []
for lang, code in blocks:
    if lang == "python":
        tree = ast.parse(code)
        *body, last = tree.body
        scope = {}
        exec(compile(ast.Module(body=body, type_ignores=[]), "README", "exec"), scope)
        value = eval(compile(ast.Expression(last.value), "README", "eval"), scope)
        results.append(["python", code.strip().splitlines()[-1], getattr(value, "num_rows", None) or len(value)])
    else:
        from pyspark.sql import SparkSession

        from pipelines.warehouse.iceberg.spark import session_conf
        from pipelines.warehouse.warehouse import open_warehouse

        builder = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                   .config("spark.sql.warehouse.dir", sys.argv[2]))
        for key, value in session_conf(open_warehouse("warehouse")).items():  # the catalog `kaudit`
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        for statement in code.split(";"):
            sql = "\n".join(ln for ln in statement.splitlines() if not ln.strip().startswith("--")).strip()
            if sql:
                rows = spark.sql(sql).collect()
                if sql.lower().startswith("select"):
                    results.append(["sql", sql.splitlines()[0], len(rows)])
print(json.dumps(results))
'''


def test_every_query_of_the_models_readme_returns_rows(newcomer, tmp_path):
    home, _ = newcomer
    proc = subprocess.run(
        [sys.executable, "-c", QUERIES, str(REPO / "models" / "README.md"), str(tmp_path / "spark-warehouse")],
        cwd=home, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [lang for lang, _, _ in results] == ["python", "python", "python", "sql", "sql", "sql"], results
    assert all(n > 0 for _, _, n in results), results
