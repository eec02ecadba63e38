"""The unit-removal loop shared by the minimizers (traces/minimize/minimize.py: a trace, the white-box
spec as oracle; traces/minimize/minimize_history.py: a history, the black-box guarantees as oracle).

Delta debugging over units: try removing chunks of units, halving the chunk size down to one
unit; after each removal the units are found again on what is left (a removal can merge,
split or empty other units). Deterministic: units are tried in the order `units()` lists them.
"""
from __future__ import annotations

from typing import Callable, Hashable


def remove_units(units: Callable[[], dict], try_remove: Callable[[list, dict], bool]) -> None:
    """`units()` -> {label: unit} on the current state (only the removable ones);
    `try_remove(labels, table)` removes those units if the oracle still rejects the result
    (updating the state) and says whether it did."""
    table = units()
    labels: list[Hashable] = list(table)
    if not labels:
        return
    chunk = max(1, len(labels) // 2)
    while True:
        i = 0
        while i < len(labels):
            part = labels[i:i + chunk]
            if try_remove(part, table):
                table = units()
                done = set(part)
                labels = [lab for lab in labels if lab not in done and lab in table]
            else:
                i += chunk
        if chunk == 1:
            break
        chunk = max(1, chunk // 2)


__all__ = ["remove_units"]
