"""A group's progress over a queue: handled offsets, and skipping past offsets that are gone."""
from hypothesis import given, strategies as st

from rocketspec.spec.state import Progress


def test_skip_keeps_an_offset_handled_exactly_at_the_new_watermark():
    p = Progress(0)
    p.handle(5)                      # consumed out of order
    assert p.skip_to(5) == 5         # 0..4 were never handled
    assert p.wm == 6 and not p.handled(6) and p.handled(5)


@given(st.sets(st.integers(0, 40)), st.integers(0, 50))
def test_skip_to_marks_below_top_and_keeps_what_was_handled(handled, top):
    p = Progress(0)
    for o in sorted(handled):
        p.handle(o)
    left = p.skip_to(top)
    assert left == len([o for o in range(top) if o not in handled])
    for o in range(60):
        assert p.handled(o) == (o < top or o in handled)
