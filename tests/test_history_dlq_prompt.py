"""H-RETRY-3 (the DLQ copy stored promptly after the last failed delivery) judged only when the
failure that sent the message to the DLQ is recorded (random 5.5.0 run 12009)."""
from rocketspec.spec.history import check_history
from rocketspec.traces.history.model import Consume, DeadLetter, Group, History, Produce


def _history(counts):
    """A concurrent group (maxReconsumeTimes 3) whose message failed at each count in `counts`,
    1.1 s apart, and whose DLQ copy (count 4: sent back at count 3) was stored 85 ms after the
    count-3 call would have ended."""
    h = History("h", "msgtrace", True, observes=frozenset({"dead_letters"}))
    g = h.group("G")
    g.consume_mode, g.message_model, g.max_reconsume_times = "CONCURRENTLY", "CLUSTERING", 3
    g.subscriptions = {"T": ("TAG", "*")}
    h.produces.append(Produce("m1", "T", 1000))
    for k in counts:
        start = 2000 + 1100 * k
        h.consumes.append(Consume("G", "m1", start, start + 30, reconsume_times=k, success=False))
    h.dead_letters.append(DeadLetter("G", "m1", 2000 + 1100 * 3 + 115, reconsume_times=4))
    return h


def _retry3(h):
    return next(v for v in check_history(h).verdicts if v.id == "H-RETRY-3")


def test_a_dead_letter_whose_last_failure_left_no_record_is_not_judged_late():
    """Run 12009: the trace dispatcher lost the count-3 call's records; measured from the count-2
    failure the DLQ copy looked 1.2 s late (a 'delayed detour')."""
    v = _retry3(_history([0, 1, 2]))
    assert v.status != "violated", v
    assert v.counts.get("dead letters whose last failure is not recorded") == 1, v.counts


def test_a_dead_letter_after_its_recorded_last_failure_is_judged():
    assert _retry3(_history([0, 1, 2, 3])).status == "holds"
    late = _history([0, 1, 2, 3])
    late.dead_letters[0].ts += 3000
    assert _retry3(late).status == "violated"
