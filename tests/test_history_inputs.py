"""`rocketspec history` never passes an input it could not read (issue 44).

The OpenChaos Recorder's layouts, from openmessaging/openchaos's RequestLogEntry and
ResponseLogEntry.toString (tab-separated, in this order):
- io.openmessaging.chaos, April 2020: REQUEST clientId, operation, type, value, shardingKey,
  timestamp (6); RESPONSE clientId, operation, type, result, value, shardingKey, timestamp,
  latency (8);
- September 2020: extraInfo appended to both (7 and 9);
- October 2020 on (io.openchaos): RESPONSE also endToEndLatency after extraInfo (10).
The first layout is read (not refused); a file none of whose lines parse is exit 2 at its
first line; a file partly unreadable is reported with the count and the first bad line, and
with --complete (every record declared present) it is exit 2.
"""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main


def history(*args):
    res = CliRunner().invoke(main, ["history", "--quiet", *map(str, args)])
    return res.exit_code, res.output


def first_layout(lost: bool = False) -> str:
    """A history in the io.openmessaging.chaos layout: two messages sent and dequeued (after the
    consumer's first dequeue, so that the start position is known), or one of them lost."""
    rows = ["0\tenqueue\tREQUEST\t0\tnull\t1000", "0\tenqueue\tRESPONSE\tSUCCESS\t0\tnull\t1001\t1",
            "1\tdequeue\tRESPONSE\tSUCCESS\t0\tnull\t1500\t0",
            "0\tenqueue\tREQUEST\t1\tnull\t1600", "0\tenqueue\tRESPONSE\tSUCCESS\t1\tnull\t1601\t1",
            "0\tenqueue\tREQUEST\t2\tnull\t1700", "0\tenqueue\tRESPONSE\tSUCCESS\t2\tnull\t1701\t1",
            "1\tdequeue\tRESPONSE\tSUCCESS\t2\tnull\t2000\t0"]
    if not lost:
        rows.append("1\tdequeue\tRESPONSE\tSUCCESS\t1\tnull\t2100\t0")
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("flags", [[], ["--complete"]])
def test_the_first_openchaos_layout_is_read(tmp_path, flags):
    p = tmp_path / "2020-05-01-00-00-00-rocketmq-chaos-history-file"
    p.write_text(first_layout())
    code, out = history(p, *flags)
    assert code == 0 and "3 sends, 3 deliveries" in out and "H-DELIVER-1  HOLDS" in out, out
    p.write_text(first_layout(lost=True))
    code, out = history(p, *flags)
    assert code == 1 and "H-DELIVER-1  VIOLATED" in out, out


@pytest.mark.parametrize("flags", [[], ["--complete"], ["--lossy"]])
def test_a_file_no_line_of_which_parses_is_refused_at_its_first_line(tmp_path, flags):
    p = tmp_path / "h.openchaos"
    # every line short of the layout: no record read
    p.write_text("".join(f"{v}\tdequeue\tRESPONSE\tSUCCESS\n" for v in range(5)))
    code, out = history(p, "--format", "openchaos", *flags)
    assert code == 2 and f"{p}:1:" in out and "no record could be read as openchaos" in out, out


@pytest.mark.parametrize("flags", [[], ["--complete"]])
def test_a_json_lines_trace_read_as_msgtrace_is_refused(tmp_path, flags):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(orjson.dumps({"seq": i, "ts": i, "kind": "trace_started"}) + b"\n" for i in range(3)))
    code, out = history(p, "--format", "msgtrace", *flags)
    assert code == 2 and f"{p}:1:" in out and "no record could be read as msgtrace" in out, out


def test_a_partly_unreadable_history_is_reported_and_refused_when_declared_complete(tmp_path):
    p = tmp_path / "2020-05-01-00-00-00-rocketmq-chaos-history-file"
    p.write_text(first_layout() + "1\tdequeue\tRESPONSE\tSUCCESS\n")
    code, out = history(p)
    # judged, as lossy, with the count and the first bad line said
    assert code == 0, out
    assert "1 unparseable record(s), not used" in out and f"{p}:10: RESPONSE line with 4 fields" in out
    code, out = history(p, "--complete")
    assert code == 2, out
    assert f"{p}:10:" in out and "1 unparseable record(s) in all" in out and "--complete declares every record" in out
    code, out = history(p, "--strict")
    assert code == 2 and f"{p}:10:" in out
