"""Option types and helpers shared by the subcommands."""
from __future__ import annotations

import os
import sys

import click

# Seeds travel in the trace (schema type int: a signed 64-bit integer in Parquet).
SEED = click.IntRange(0, 2**63 - 1)


class Seconds(click.ParamType):
    """A duration in seconds: a finite number above 0 and at most `max_s` (click's FloatRange
    lets nan through, since every comparison with nan is false)."""

    name = "SECONDS"

    def __init__(self, max_s: float):
        self.max_s = max_s

    def convert(self, value, param, ctx):
        import math

        if isinstance(value, (int, float)) and not isinstance(value, bool):
            v = float(value)
        else:
            try:
                v = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(v) or not 0 < v <= self.max_s:
            self.fail(f"{value!r} is not a finite number of seconds above 0 and at most {self.max_s:g}",
                      param, ctx)
        return v


def progress_shown(enabled: bool = True) -> bool:
    """Whether a progress bar would be shown: standard error is a terminal and not in CI."""
    return enabled and _stderr_is_terminal() and os.environ.get("CI", "").lower() not in ("1", "true", "yes")


def progress_bar(enabled: bool = True, **kw):
    """A tqdm bar on standard error when it is a terminal, else None: quiet in pipes, files
    and CI (CI=true), so logs hold results, not carriage returns."""
    if not progress_shown(enabled):
        return None
    from tqdm import tqdm

    return tqdm(file=sys.stderr, dynamic_ncols=True, leave=False, mininterval=0.5, **kw)


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def read_groups_file(path):
    """A history's `--groups` file (group -> subscriptions and settings), checked, or None:
    errors name this file and the line (traces.history.sources.read_groups)."""
    if path is None:
        return None
    from rocketspec.traces.history.sources import read_groups

    return read_groups(path)
