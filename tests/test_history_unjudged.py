"""Never a pass on nothing: a guarantee that could not be judged for a group says so, and a
history of which nothing could be judged is incomplete (exit 4), not HOLDS.

Message-trace bodies name no consumer (4.9.8 TraceDataEncoder: SubBefore carries group, request
id, message id, retry times, keys), so a BROADCASTING group, where each consumer must get each
message, cannot be judged from them for H-DELIVER-1 (docs/notes/handwritten D1, h07).
"""
import json
import subprocess
from pathlib import Path

from rocketspec.spec.history import check_history
from rocketspec.traces.history.model import Consume, Group, History, Produce

BIN = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "rocketspec"
A, B = "\x01", "\x02"


def _pub(i, topic="Config"):
    return A.join(["Pub", str(2000 + i), "DefaultRegion", "P", topic, f"M{i:04d}", "null", "null", "127.0.0.1:1",
                   "10", "1", "0", f"OFF{i:04d}", "true"]) + B


def _sub(i, group, req):
    before = A.join(["SubBefore", str(2000 + i), "null", group, req, f"M{i:04d}", "0", "null"]) + B
    after = A.join(["SubAfter", req, f"M{i:04d}", "1", "true", "null", "0", str(2001 + i), group]) + B
    return before + after


def _history(tmp_path, groups, lines, *args):
    (tmp_path / "groups.json").write_text(json.dumps(groups))
    (tmp_path / "h.msgtrace").write_text("\n".join(lines) + "\n")
    return subprocess.run([str(BIN), "history", "--quiet", "--format", "msgtrace", "--groups",
                           str(tmp_path / "groups.json"), *args, str(tmp_path / "h.msgtrace")],
                          capture_output=True, text=True)


BC = {"G_BC": {"consume_mode": "CONCURRENTLY", "message_model": "BROADCASTING", "max_reconsume_times": -1,
               "subscriptions": {"Config": "*"}}}
CL = {"G_CL": {"consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING", "max_reconsume_times": -1,
               "subscriptions": {"Config": "*"}}}


def test_a_broadcasting_group_from_bodies_is_not_judged_and_nothing_judged_is_incomplete(tmp_path):
    # 10 sends, only 4 ever consumed by anyone, declared complete: from bodies nobody can say
    # which consumer missed what; the verdict must not be HOLDS
    lines = [_pub(i) for i in range(10)] + [_sub(i, "G_BC", f"R{i}") for i in range(4)]
    r = _history(tmp_path, BC, lines, "--complete", "--json")
    assert r.returncode == 4, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["verdict"] == "incomplete" and d["ok"] is False
    v = next(g for g in d["guarantees"] if g["id"] == "H-DELIVER-1")
    assert v["status"] == "skipped" and "G_BC" in v["missing"][0]
    assert "names no consumer" in v["not_judged"]["G_BC"]
    t = _history(tmp_path, BC, lines, "--complete")
    assert t.returncode == 4 and "INCOMPLETE" in t.stdout.splitlines()[0]
    assert "not judged for group G_BC" in t.stdout


def test_a_judged_group_beside_an_unjudged_broadcasting_one_holds_and_names_the_other(tmp_path):
    lines = [_pub(i) for i in range(5)] + [_sub(i, "G_CL", f"C{i}") for i in range(5)] + \
        [_sub(i, "G_BC", f"B{i}") for i in range(2)]
    r = _history(tmp_path, {**BC, **CL}, lines, "--complete", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    v = next(g for g in d["guarantees"] if g["id"] == "H-DELIVER-1")
    assert d["verdict"] == "holds" and v["status"] == "holds" and v["counts"]["consumed"] == 5
    assert list(v["not_judged"]) == ["G_BC"]
    # and a loss of the clustering group is still found
    lines = [_pub(i) for i in range(5)] + [_sub(i, "G_CL", f"C{i}") for i in range(4)]
    r = _history(tmp_path, {**BC, **CL}, lines, "--complete", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["verdict"] == "violated"


def test_named_broadcasting_consumers_are_judged_each():
    h = History("mem", "trace", True, observes=frozenset({"dead_letters"}))
    # m2 is sent after both consumers consumed m0 and m1; only c1 gets it
    h.produces = [Produce("m0", "T", 0, True), Produce("m1", "T", 10, True), Produce("m2", "T", 50, True)]
    h.consumes = [Consume("G", mid, ts, ts + 1, c, None, None, 0, True, None, None, f"mem:{c}{mid}")
                  for c, mid, ts in (("c1", "m0", 20), ("c2", "m0", 21), ("c1", "m1", 30), ("c2", "m1", 31),
                                     ("c1", "m2", 60))]
    h.groups["G"] = Group("G", "CONCURRENTLY", "BROADCASTING", {"T": ("TAG", "*")}, max_reconsume_times=-1, started_ts=0,
                          members={"c1": [0, None], "c2": [0, None]})
    rep = check_history(h)
    v = next(v for v in rep.verdicts if v.id == "H-DELIVER-1")
    assert v.status == "violated" and not v.not_judged and rep.verdict == "violated"
