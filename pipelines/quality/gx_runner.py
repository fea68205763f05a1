"""Great Expectations 1.x plumbing: a file data context kept in ``validation/gx/`` of the
warehouse (so Data Docs list every run), a dataframe asset per view in each of two datasources
(Spark for a big run's views, pandas for a small run's: ``pipelines.quality.materialized``), one
GX suite per (kaudit suite, view), and Data Docs built into ``validation/data_docs/``.

Every view gets a ``_row`` id (materialised once) that GX reports for unexpected rows;
``run_checks`` turns GX's answer into :class:`CheckResult`s carrying those ids."""

from __future__ import annotations

import logging
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import great_expectations as gx  # (GX_ANALYTICS_ENABLED: set by pipelines.quality, imported first)
from great_expectations.core.run_identifier import RunIdentifier
from great_expectations.data_context.types.base import ProgressBarsConfig
from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier
from great_expectations.datasource.fluent import PandasDatasource, SparkDatasource

from pipelines.quality.materialized import ROW_ID
from pipelines.quality.spec import Check

# engine: (datasource name, its class, the settings it is written with and must have)
DATASOURCES = {
    "spark": ("kaudit", SparkDatasource, {"persist": False}),
    "pandas": ("kaudit_pandas", PandasDatasource, {}),
}
BATCH = "whole"
SITE = "kaudit"
TABLE_LEVEL = ("expect_table_",)
GX_KEYS = ("element_count", "unexpected_count", "unexpected_percent", "observed_value")  # of a result's ``result``

for _name in ("great_expectations", "py4j"):
    logging.getLogger(_name).setLevel(logging.ERROR)


@dataclass
class CheckResult:
    check: Check
    suite: str
    success: bool
    unexpected_count: int | None
    element_count: int | None
    row_ids: list[int] | None  # None: every row of the view fails (table-level), or unknown
    observed: object = None
    error: str | None = None
    extra: dict = field(default_factory=dict)
    # Great Expectations' own answer, as it returned it: success, element_count,
    # unexpected_count, unexpected_percent, observed_value (a key it gave none of is absent)
    gx: dict = field(default_factory=dict)
    evaluated_at: datetime | None = None  # the run time of the GX validation

    @property
    def table_level(self) -> bool:
        return self.check.expectation.expectation_type.startswith(TABLE_LEVEL)


class GxProject:
    """The warehouse's GX file context and its Data Docs site."""

    _open: dict[Path, GxProject] = {}

    @classmethod
    def for_root(cls, validation_root: Path, views: Iterable[str] = ()) -> GxProject:
        """The project of ``validation_root`` with a dataframe asset for each of ``views``, set
        up once per process (its context reads and writes its config files once, not on every
        run validated)."""
        views, key = tuple(views), validation_root.resolve()
        project = cls._open.get(key)
        if project is None or not (key / "gx").is_dir() or not project.has_assets(views):
            project = cls._open[key] = cls(validation_root, views)
        return project

    def __init__(self, validation_root: Path, views: Iterable[str] = ()):
        validation_root.mkdir(parents=True, exist_ok=True)
        self.docs_dir = validation_root / "data_docs"
        self.context = gx.get_context(mode="file", project_root_dir=str(validation_root))
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        site = {
            "class_name": "SiteBuilder",
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(self.docs_dir)},
        }
        sites = self.context.list_data_docs_sites()
        for name in list(sites):
            if name != SITE:
                self.context.delete_data_docs_site(name)
        if SITE in sites:
            self.context.update_data_docs_site(SITE, site)
        else:
            self.context.add_data_docs_site(SITE, site)
        # a datasource the context already has is kept when it has an asset for every view
        # (and, Spark's, does not persist); else it is written once with all of them (GX
        # rewrites the project's YAML for every asset or batch definition added one by one: 30
        # rewrites, seconds, in a new warehouse). Spark's not persisted: a view is already
        # computed once (``pipelines.quality.materialized``; persisted, each metric query was a
        # job on the cached copy: the demo's runs 103 -> 65 and 93 -> 56 jobs)
        views = tuple(views)
        existing = self.context.data_sources.all()
        self.datasources = {engine: existing.get(name) for engine, (name, _, _) in DATASOURCES.items()}
        if not self.has_assets(views):
            for engine, (name, _, settings) in DATASOURCES.items():
                source = self.datasources[engine]
                have = [a.name for a in source.assets] if _usable(engine, source) else []
                assets = [
                    {"name": view, "type": "dataframe", "batch_definitions": [{"name": BATCH}]}
                    for view in dict.fromkeys([*have, *views])
                ]
                add = getattr(self.context.data_sources, f"add_or_update_{engine}")
                self.datasources[engine] = add(name=name, assets=assets, **settings)
        self._validated: set[str] = set()  # GX suites validated since the last docs build
        self._runs: set[tuple[str, str]] = set()  # ... and the run identifiers of their validations

    def has_assets(self, views: Iterable[str]) -> bool:
        """Both datasources have a dataframe asset with the whole-frame batch for each of
        ``views`` (and Spark's does not persist)."""
        views = tuple(views)
        for engine, source in self.datasources.items():
            if not _usable(engine, source):
                return False
            batches = {a.name: {b.name for b in a.batch_definitions} for a in source.assets}
            if not all(BATCH in batches.get(view, ()) for view in views):
                return False
        return True

    def _batch_definition(self, engine: str, view: str):
        try:
            asset = self.datasources[engine].get_asset(view)
        except LookupError:
            asset = self.datasources[engine].add_dataframe_asset(name=view)
        try:
            return asset.get_batch_definition(BATCH)
        except (KeyError, LookupError, ValueError):
            return asset.add_batch_definition_whole_dataframe(BATCH)

    def run_checks(
        self, suite_name: str, view: str, frame, checks: list[Check], run_id: str
    ) -> list[CheckResult]:
        """Evaluate ``checks`` on ``frame`` (which carries ``_row``: a Spark DataFrame, or a
        pandas one) as the GX suite ``<suite>.<view>`` with the engine of its kind; the
        validation result lands in the context's store for Data Docs."""
        gx_suite = gx.ExpectationSuite(name=f"{suite_name}.{view}")
        by_name = {}
        for check in checks:
            expectation = check.expectation
            expectation.meta = {**(expectation.meta or {}), "kaudit_check": check.name, "level": check.level}
            if check.description and not expectation.description:
                expectation.description = f"[{check.level}] {check.description}"
            gx_suite.add_expectation(expectation)
            by_name[check.name] = check
        gx_suite = self.context.suites.add_or_update(gx_suite)
        self._validated.add(gx_suite.name)
        definition = self.context.validation_definitions.add_or_update(
            gx.ValidationDefinition(
                name=f"{suite_name}.{view}", data=self._batch_definition(_engine(frame), view), suite=gx_suite
            )
        )
        evaluated_at = datetime.now(UTC)
        run = RunIdentifier(run_name=run_id, run_time=evaluated_at)
        self._runs.add(run.to_tuple())
        outcome = definition.run(
            batch_parameters={"dataframe": frame},
            # no rendered query of the unexpected rows: GX renders it by analysing
            # ``df.filter(condition)``, which Spark rejects for the window conditions of its
            # uniqueness expectations, and Spark's ObservationManager logs that failure as an
            # error with a stack trace; the row ids are all kaudit exports
            result_format={
                "result_format": "COMPLETE",
                "unexpected_index_column_names": [ROW_ID],
                "return_unexpected_index_query": False,
            },
            run_id=run,
        )
        results = []
        for r in outcome.results:
            check = by_name[r.expectation_config.meta["kaudit_check"]]
            result = _check_result(check, suite_name, r)
            result.evaluated_at = evaluated_at
            results.append(result)
        order = {c.name: i for i, c in enumerate(checks)}
        return sorted(results, key=lambda c: order[c.check.name])

    def build_docs(self) -> Path:
        """The Data Docs site: when it exists, the pages of the validation results and of the
        suites validated since the last build are rendered (the earlier validations' pages, a
        run's earlier ones among them, are already there) and the index lists every run; else
        every page."""
        index = self.docs_dir / "index.html"
        changed = None
        if index.exists():
            store = self.context.validation_results_store
            changed = [key for key in store.list_keys() if key.run_id.to_tuple() in self._runs]
            changed += [ExpectationSuiteIdentifier(name=name) for name in sorted(self._validated)]
        self.context.build_data_docs(site_names=[SITE], resource_identifiers=changed or None)
        self._validated.clear()
        self._runs.clear()
        return index


def _engine(frame) -> str:
    import pandas as pd

    return "pandas" if isinstance(frame, pd.DataFrame) else "spark"


def _usable(engine: str, source) -> bool:
    """``source`` is a datasource of ``engine``'s kind, with its settings (Spark's not persisting)."""
    _, kind, settings = DATASOURCES[engine]
    return isinstance(source, kind) and all(getattr(source, key) == value for key, value in settings.items())


def _check_result(check: Check, suite: str, r) -> CheckResult:
    info = r.exception_info or {}
    error = None
    if info.get("raised_exception"):
        error = str(info.get("exception_message") or "expectation raised an exception").splitlines()[0]
    res = r.result or {}
    gx = {"success": r.success, **{k: res[k] for k in GX_KEYS if k in res}}
    table_level = check.expectation.expectation_type.startswith(TABLE_LEVEL)
    if table_level:
        observed = res.get("observed_value")
        rows = _int(observed)
        unexpected = 0 if r.success else rows
        return CheckResult(check, suite, bool(r.success), unexpected, rows, None, observed, error, gx=gx)
    ids = None
    if "unexpected_index_list" in res:
        ids = [int(item[ROW_ID]) for item in res["unexpected_index_list"] or []]
    unexpected, elements = _int(res.get("unexpected_count")), _int(res.get("element_count"))
    if elements == 0 and error is None:
        unexpected = 0  # an empty view has no unexpected rows (GX's Spark engine says None, pandas 0)
    return CheckResult(
        check,
        suite,
        bool(r.success) and error is None,
        unexpected,
        elements,
        ids,
        res.get("observed_value"),
        error,
        gx=gx,
    )


def _int(value) -> int | None:
    """A count GX gives as an int or a numpy integer (pandas engine); None for anything else."""
    return int(value) if isinstance(value, numbers.Integral) else None
