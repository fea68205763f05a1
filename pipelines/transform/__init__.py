"""The dbt side of kaudit: the runner of the project at the repository root (``models/``,
``snapshots/``, ``macros/``) and the description of the warehouse tables it reads."""
