"""Reducing a failing trace or history: delta debugging, units, renumbering, the spec as oracle."""
