"""RocketMQ's own client log on real 5.x runs (`record --release 5.5.0`), as the oracle reads it.

The random runs' oracle reads membership changes (joins, leaves, rebalances) from the run's
`logs/rocketmqlogs/rocketmq_client.log` (conformance/client_log.py). 4.9.8's client logger writes
that file; 5.x logs through its shaded logback, whose broker configuration writes seconds in GMT+8
to broker*.log and no client log, so the recorder adds the file to the release's configuration
(traces/recorder/releases/5/rmq.logback.client-log.xml, docs/recorder.md). real-kill runs two
consumers, c2 in its own JVM, and SIGKILLs c2: the driver's JVM (broker, c1) and c2's JVM must both
write to the log, in a layout read_changes places in the trace's own time. About 20 s, so it runs
in the default test run, as test_real_5x's 5.5.0 run does (skipped, saying why, without Java or
the pinned jars unless ROCKETSPEC_REQUIRE_REAL=1).
"""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

import realfacts as f
from conformance.client_log import LOG, read_changes
from rocketspec.traces import recorder_build as rb
from test_real_5x import _require, record

GROUP = "GID_real_kill"


def _c2_consumed_before_its_kill(ev) -> bool:
    crashed = [e["seq"] for e in f.by_kind(ev, "client_crashed") if e["client"].endswith("@c2")]
    return bool(crashed) and any(e["client"].endswith("@c2") and e["seq"] < crashed[0]
                                 for e in f.by_kind(ev, "consume_started"))


def test_5_5_0_run_writes_a_client_log_the_oracle_places_in_time(tmp_path):
    """c2 is killed 5 s in; a JVM slowed by a loaded machine may not have rebalanced by then (it
    registered, but took no queue). Such a run cannot show c2's JVM writing the log: record until
    c2's listener ran before its kill, at most three runs, each checked for what it can show."""
    _require("5.5.0")
    for attempt in range(3):
        shown = _one_kill_run(tmp_path / f"attempt{attempt}")
        if shown:
            return
    pytest.fail("in three real-kill runs c2's JVM consumed nothing before its kill")


def _one_kill_run(tmp_path: Path) -> bool:
    tmp_path.mkdir()
    _, ev = record("real-kill", "5.5.0", tmp_path)
    run = tmp_path / "run"
    assert (run / LOG).is_file(), f"a 5.5.0 run's folder holds no {LOG}"
    changes, note = read_changes(run)
    assert "membership change(s) from RocketMQ's client log" in note, note
    # placed in time: every change lies within the recorded run (the trace's ts is epoch ms; a log
    # read in the wrong zone, as 5.x's GMT+8 broker logs would be, lands hours away)
    start, end = ev[0]["ts"], ev[-1]["ts"]
    assert all(start - 1000 <= c.ts <= end + 1000 for c in changes), \
        [(c.what, c.client, c.ts) for c in changes if not start - 1000 <= c.ts <= end + 1000]
    mine = [c for c in changes if c.group == GROUP]

    def of(what, client):
        return [c for c in mine if c.what == what and (c.client or "").endswith("@" + client)]

    # the broker (driver's JVM) registered both consumers, and c1's JVM wrote its rebalance
    assert of("joined", "c1") and of("joined", "c2"), note
    assert of("rebalanced", "c1"), [(c.what, c.client) for c in mine]
    # c2's channel closed when its JVM was killed (the driver stamps client_crashed once the kill has
    # returned: the broker may log the close a little before), then c1 took its queues
    crashed = [e["ts"] for e in f.by_kind(ev, "client_crashed") if e["client"].endswith("@c2")]
    assert len(crashed) == 1
    left = of("left", "c2")
    assert left and abs(left[0].ts - crashed[0]) < 1000, (crashed, [(c.ts, c.detail) for c in left])
    assert left[0].ts > max(c.ts for c in of("joined", "c2") + of("rebalanced", "c2"))
    assert any(c.ts > left[0].ts for c in of("rebalanced", "c1"))
    if not _c2_consumed_before_its_kill(ev):
        return False
    # c2's listener ran, so its rebalance had taken queues: its own JVM wrote that to the log
    assert of("rebalanced", "c2"), [(c.what, c.client) for c in mine]
    return True


def test_the_5x_logging_configuration_is_the_releases_own_plus_the_client_log():
    """The build's rmq.logback.xml keeps every element of the release's rmq.broker.logback.xml
    (its other logs unchanged) and adds the client log; 4.9.8 gets none; a classpath without the
    broker's configuration is refused (exit 2), not built without the log."""
    _require("5.5.0")
    cp = (Path(__file__).resolve().parent.parent / "build" / "rocketmq-5.5.0" / "classpath.txt").read_text().strip()
    broker = next(j for j in cp.split(":") if Path(j).name == "rocketmq-broker-5.5.0.jar")
    own = zipfile.ZipFile(broker).read(rb.LOG_BASE).decode()
    config = rb.logging_config("5.5.0", cp)
    head = own[:own.rfind("</configuration>")]
    assert config.startswith(head) and config.endswith("</configuration>\n")
    added = config[len(head):]
    assert '<appender name="RocketspecClientLog"' in added
    assert "rocketmq_client.log" in added and '%d{"yyyy-MM-dd HH:mm:ss,SSS"}' in added
    assert re.search(r'<logger name="RocketmqBroker">\s*<appender-ref ref="RocketspecClientLog"/>', added)
    assert re.search(r'<root>\s*<appender-ref ref="RocketspecClientLog"/>', added)
    assert rb.logging_config("4.9.8", "") is None
    with pytest.raises(rb.BuildError) as err:
        rb.logging_config("5.5.0", ":".join(j for j in cp.split(":") if j != broker))
    assert err.value.code == 2 and rb.LOG_BASE in str(err.value)
