"""Spark transforms: registry, expected assignment, audit (pure DataFrame -> DataFrame)."""
