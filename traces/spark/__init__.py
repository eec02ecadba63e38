"""Replaying traces on Spark: whole-trace, scoped and Arrow paths, and the preflight checks."""
