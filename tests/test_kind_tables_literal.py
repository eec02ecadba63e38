"""The tables the tools keep per event kind, derived from the registry (traces/kinds.py), equal
today's literal tables: the derivation changes nothing. Deleted once the tools derive them."""
from rocketspec.conformance import scripts
from rocketspec.traces import narrate, renumber, timeline, units
from rocketspec.traces.history import from_trace
from rocketspec.traces.kinds import KINDS


def _where(**kw):
    return frozenset(n for n, k in KINDS.items() if all(getattr(k, f) == v for f, v in kw.items()))


def test_minimizer_units():
    assert _where(unit="directory") == units.DIRECTORY
    assert _where(unit="call_result") == units._RESULT_KINDS
    assert _where(unit="pull") == units._PULL_KINDS
    assert _where(unit="lock_answer") == units._LOCK_KINDS


def test_renumbering():
    assert _where(renumber="other_queue") == renumber._OTHER_QUEUE
    assert _where(renumber="call") == renumber._CALL_KINDS


def test_narrated_scripts():
    assert _where(scripts=True) == frozenset(scripts.DEFAULT_KINDS)


def test_history_disruptions():
    assert {n: k.history.split(":", 1)[1] for n, k in KINDS.items()
            if k.history and k.history.startswith("disruption:")} == from_trace._DISRUPTIONS


def test_timeline_tables():
    assert _where(lane="schedule") == timeline.NOT_LANE_KINDS
    assert frozenset(n for n, k in KINDS.items() if k.lane in ("pause", "resume", "crash", "restart")) \
        == frozenset(timeline.LIFE_KINDS)


def test_sentences_are_narrates():
    """The same sentence for every kind, on events of every fixture trace."""
    import glob

    from rocketspec.traces.io import read_events

    n = 0
    for path in sorted(glob.glob("tests/traces/*.jsonl") + glob.glob("tests/fixtures/**/*.jsonl", recursive=True)):
        try:
            for _, ev in read_events(path, validate=False):
                k = KINDS.get(ev.get("kind"))
                if k is None:
                    continue
                try:
                    want = narrate._D[ev["kind"]](ev)
                except (TypeError, KeyError, ValueError) as exc:
                    want = type(exc)
                try:
                    got = k.sentence(ev)
                except (TypeError, KeyError, ValueError) as exc:
                    got = type(exc)
                assert got == want, (path, ev)
                n += 1
        except Exception as exc:            # a fixture of bad input: not an event list
            if type(exc).__name__ in ("TraceInputError", "UserError"):
                continue
            raise
    assert n > 10_000
    assert set(narrate._D) == set(KINDS)
