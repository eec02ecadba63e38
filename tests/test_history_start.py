"""H-DELIVER-1 holds a group to the start RocketMQ gives it (docs/notes/handwritten D2, h01).

4.9.8 RebalancePushImpl.computePullFromWhere: a group with no committed offset and
CONSUME_FROM_FIRST_OFFSET starts at 0 (the broker moves a pull below the queue's minimum up to
it), so it owes every retained message, the backlog sent before its first consumption included.
From LAST_OFFSET it starts at 0 only while the queue's first message is in the broker's memory
(ConsumerManageProcessor.queryConsumerOffset), else at the queue's end when it gets the queue: a
history shows neither, so what was sent before the first consumption is not judged, and counted.
"""
import json
import subprocess
from pathlib import Path

import pytest

from rocketspec.errors import UserError
from rocketspec.spec.history import check_history
from rocketspec.traces.history.model import Consume, Group, History, Produce
from rocketspec.traces.history.sources import declare_groups

BIN = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "rocketspec"


def backlog(where=None, consumed=range(10, 60)):
    """60 messages, one every 100 ms; the group consumes m_i at 3000 + 100 i (of those in `consumed`)."""
    h = History("mem", "msgtrace", True)
    h.produces = [Produce(f"m{i}", "T", 100 * i, True) for i in range(60)]
    h.consumes = [Consume("G", f"m{i}", 3000 + 100 * i, 3001 + 100 * i, None, None, None, 0, True, None, None,
                          f"mem:{i}") for i in consumed]
    h.groups["G"] = Group("G", "CONCURRENTLY", "CLUSTERING", {"T": ("TAG", "*")}, max_reconsume_times=-1,
                          consume_from_where=where)
    return next(v for v in check_history(h).verdicts if v.id == "H-DELIVER-1")


def test_a_first_offset_group_owes_its_backlog():
    # m0..m9 were sent before the group's first consumption (m10 at ts 4000) and never consumed
    v = backlog("CONSUME_FROM_FIRST_OFFSET")
    assert v.status == "violated" and v.n_findings == 10 and v.counts["lost"] == 10
    assert backlog("CONSUME_FROM_FIRST_OFFSET", range(60)).status == "holds"


@pytest.mark.parametrize("where", [None, "CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_TIMESTAMP"])
def test_a_start_the_history_cannot_place_is_not_judged_and_counted(where):
    v = backlog(where)
    assert v.status == "holds"
    assert v.counts["not judged: sent before the first consumption, start position unknown"] == 10  # m0..m9
    assert any("consume_from_where" in n for n in v.notes)
    # a message sent after the first consumption is owed whatever the start
    v = backlog(where, [i for i in range(10, 60) if i != 45])
    assert v.status == "violated" and v.n_findings == 1


def test_the_groups_file_declares_consume_from_where(tmp_path):
    h = History("g.json", "msgtrace", None)
    declare_groups(h, {"G": {"consume_from_where": "CONSUME_FROM_FIRST_OFFSET"}})
    assert h.groups["G"].consume_from_where == "CONSUME_FROM_FIRST_OFFSET"
    with pytest.raises(UserError, match="expected one of CONSUME_FROM_LAST_OFFSET"):
        declare_groups(h, {"G": {"consume_from_where": "FIRST"}})
    (tmp_path / "g.json").write_text('{"G": {\n "consume_from_where": "FIRST"}}')
    (tmp_path / "h.msgtrace").write_text("x\n")
    r = subprocess.run([str(BIN), "history", "--quiet", "--groups", str(tmp_path / "g.json"),
                        str(tmp_path / "h.msgtrace")], capture_output=True, text=True)
    assert r.returncode == 2 and "g.json:2" in r.stderr and "consume_from_where" in r.stderr
