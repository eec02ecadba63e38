"""Benchmarks: each module prints its figures; run with python -m bench.<name>."""
