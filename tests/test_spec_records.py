"""The spec state's named records freeze to the values of the positional lists and tuples they
stand for, so the explorer's visited set and its work order see the same states."""
from hypothesis import given, strategies as st

from rocketspec.spec.state import (Busy, OrphanOutcome, Released, RetryCopy, ScheduleDone, SendBack, freeze)

small = st.one_of(st.none(), st.integers(-3, 10**6), st.text("ab%_", max_size=4))
copy_fields = st.tuples(st.sampled_from(["sent_back", "delayed", "redelivered"]), st.integers(0, 20),
                        st.integers(-1, 18), small, small, small)


@given(copy_fields, st.one_of(st.none(), st.integers(0, 10**9)))
def test_a_retry_copy_freezes_as_its_list(fields, sent_ts):
    as_list = list(fields) if sent_ts is None else list(fields) + [sent_ts]
    assert freeze(RetryCopy(*fields, sent_ts)) == freeze(as_list)
    assert freeze({("G", "m"): [RetryCopy(*fields, sent_ts)]}) == freeze({("G", "m"): [as_list]})


@given(st.tuples(st.integers(0, 20), st.integers(-1, 18), small,
                 st.one_of(st.none(), st.tuples(st.text("GT", max_size=2), st.text("T", max_size=2),
                                                 st.text("b", max_size=2), st.integers(0, 7))),
                 small, st.integers(0, 10**9)),
       small, small)
def test_named_tuples_freeze_as_their_tuples(send_back, a, b):
    for record, fields in ((SendBack(*send_back), send_back), (Busy(a, b), (a, b)), (Released(a, b), (a, b)),
                           (OrphanOutcome((a, b), a), ((a, b), a)), (ScheduleDone(a, b), (a, b))):
        assert freeze(record) == freeze(fields)
        assert freeze({"k": record}) == freeze({"k": fields})


def test_a_retry_copy_is_changed_in_place():
    c = RetryCopy("sent_back", 1, 3, None, None, "m1", 5)
    chain = [c]
    c.state, c.deliver_ts, c.sched_id = "delayed", 10_000, "s1"
    assert freeze(chain) == (("delayed", 1, 3, 10_000, "s1", "m1", 5),)
