"""Which event kinds of a Parquet trace need no schema check event by event.

A Parquet file in the writer's schema (traces.io: one typed column per field) already carries
most of what `spec.replay.FastValidator` checks per event: the column types fix each value's
type, and which columns hold a value in a row is the event's field set. `trusted_kinds` looks at a
record batch's columns as Arrow (no Python objects, one group-by pass) and names the kinds for
which every row passes FastValidator for certain:
- every column has the writer's type (text may be dictionary-encoded), and seq, ts and kind
  hold a value in every row;
- each column holding a value in a row of the kind is a field of that kind, and not a JSON one
  (their contents are checked per event: a kind with JSON values is not trusted);
- each required field of the kind is a column with a value in every row of the kind;
- no list holds a null, and every `obs` is one of the schema's values.

A kind not named (and trace_started, judged in full once per trace) is checked per event as
before, so a bad row still meets the same message. The rules come from the schema's tables
(traces.schema); that a trusted kind's rows all pass FastValidator is tested on generated
files (tests/test_parquet_trust.py)."""
from __future__ import annotations

from functools import lru_cache


def trusted_kinds(batch) -> frozenset:
    """The kinds of a Parquet record batch (or table) whose events all pass the schema check
    (above); empty for one that is not in the writer's schema."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .io import _is_dict_text, _json_fields
    from .schema import ENVELOPE, OBS_VALUES, kinds
    from .schema import _kind_rules as schema_rules

    names = batch.schema.names
    want = _writer_types()
    # (text read dictionary-encoded, as Parquet stores it, is the writer's text column)
    if len(set(names)) != len(names) or any(
            n not in want or (batch.schema.field(n).type != want[n]
                              and not (_is_dict_text(batch.schema.field(n).type) and want[n] == pa.string()))
            for n in names):
        return frozenset()
    if any(n not in names or batch.column(names.index(n)).null_count for n in ENVELOPE):
        return frozenset()
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    cols = [n for n in names if n != "kind"]
    try:
        # one pass: per kind, its rows and each column's values (count counts non-nulls)
        agg = table.group_by("kind").aggregate([(n, "count") for n in cols] + [([], "count_all")])
        per_kind = agg.to_pydict()
        lists_with_nulls = {n for n in cols
                            if pa.types.is_list(want[n]) and pc.list_flatten(table.column(n)).null_count}
        obs_bad = "obs" in names and not (set(pc.unique(table.column("obs").drop_null()).to_pylist())
                                          <= frozenset(OBS_VALUES))
    except pa.ArrowException:
        return frozenset()      # what Arrow cannot judge is checked per event
    # columns whose values no kind may skip the check for: JSON contents, lists with a null, a bad obs
    spoiled = _json_fields() | lists_with_nulls | ({"obs"} if obs_bad else set())
    known = kinds()
    trusted = set()
    counts = [per_kind[f"{n}_count"] for n in cols]
    for i, k in enumerate(per_kind["kind"]):
        if k not in known or k == "trace_started":
            continue            # judged in full (once per trace), or an unknown kind: checked per event
        required, allowed = schema_rules(k)
        need = {r for r, _ in required}
        rows = per_kind["count_all"][i]
        # a value only in a field of the kind that nothing spoiled, and every required one filled
        if need <= set(names) and all((not c[i] or (n in allowed and n not in spoiled))
                                      and (c[i] == rows or n not in need) for n, c in zip(cols, counts)):
            trusted.add(k)
    return frozenset(trusted)


@lru_cache(maxsize=1)
def _writer_types() -> dict:
    from .io import _arrow_schema

    return {f.name: f.type for f in _arrow_schema()}


class TrustingValidator:
    """FastValidator for events of kinds not trusted; nothing for the others. The reader calls
    `batch` with each Parquet record batch before its rows (read_events' on_batch), and `plain`
    before a file of another format. An event is validated after it is read and before the next
    one is, so the kinds trusted are those of its own batch."""

    def __init__(self, validate):
        self.validate = validate
        self.trusted = frozenset()
        self.batches = 0            # record batches seen (none: not Parquet)

    def batch(self, batch) -> None:
        self.batches += 1
        self.trusted = trusted_kinds(batch)

    def plain(self) -> None:
        self.trusted = frozenset()

    def __call__(self, ev):
        t = self.trusted
        if t and type(ev) is dict and ev.get("kind") in t:
            return None
        return self.validate(ev)
