"""The product's user-visible text names none of the project's issue numbers: the
expectations' descriptions (results.json, Data Docs, the report), every description of the
dbt project (models, sources, snapshots: dbt docs) and the report's page."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from pipelines.context import RunContext
from pipelines.quality.spec import load_suites
from pipelines.report.write import write_report

REPO = Path(__file__).resolve().parents[3]
ISSUE = re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)


def _descriptions(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _descriptions(value)
    elif isinstance(node, list):
        for item in node:
            yield from _descriptions(item)


def test_expectation_descriptions():
    found = [c.description for s in load_suites() for c in s.checks if ISSUE.search(c.description)]
    assert found == []


def test_dbt_descriptions():
    found = []
    for path in sorted([*REPO.glob("models/**/*.yml"), *REPO.glob("snapshots/**/*.yml")]):
        found += [f"{path.relative_to(REPO)}: {d}" for d in _descriptions(yaml.safe_load(path.read_text()))
                  if ISSUE.search(d)]
    assert found == []


def test_report_page(warehouse):
    page = write_report(RunContext(warehouse, "r", quiet=True))
    assert ISSUE.findall(page.read_text()) == []
    # every section, shown or not: the templates' text outside Jinja comments
    for template in sorted((REPO / "pipelines" / "report" / "templates").glob("*.j2")):
        text = re.sub(r"\{#.*?#\}", "", template.read_text(), flags=re.DOTALL)
        assert ISSUE.findall(text) == [], template.name
