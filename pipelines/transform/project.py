"""Where the dbt project is (its models, profiles and the marts' declaration)."""

from __future__ import annotations

import os
from pathlib import Path

from pipelines.errors import StepError

PROJECT_ENV = "KAUDIT_DBT_PROJECT_DIR"


def project_dir() -> Path:
    """The dbt project: ``$KAUDIT_DBT_PROJECT_DIR``, else the checkout holding this package,
    else the working directory."""
    candidates = []
    if os.environ.get(PROJECT_ENV):
        candidates.append(Path(os.environ[PROJECT_ENV]))
    candidates += [Path(__file__).resolve().parents[2], Path.cwd()]
    for path in candidates:
        if (path / "dbt_project.yml").is_file() and (path / "profiles.yml").is_file():
            return path.resolve()
    raise StepError(
        f"dbt project not found (no dbt_project.yml + profiles.yml in {', '.join(map(str, candidates))}); "
        f"set {PROJECT_ENV} to the kaudit checkout"
    )
