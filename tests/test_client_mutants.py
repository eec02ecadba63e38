"""The Go driver's mutants (clients/go/mutants.go, bench/client_mutants.py): the program refuses
an unknown mutant or argument as the protocol says (an `error` line, exit 2); the bench's table
names exactly the program's mutants; and (marker `real`, about 8 minutes on real RocketMQ 4.9.8)
every mutant, the driver's and the library's (bench/go_library_mutants.py), is killed by the
gate's client judgement with the id it breaks, while the unmutated client passes each scenario. Skips without Go (or, real, Java and RocketMQ), unless
ROCKETSPEC_REQUIRE_REAL=1 (then a failure)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bench import client_mutants as B
from bench import go_library_mutants as L
from test_go_client_real import go_client  # noqa: F401  (the fixture: make go-client)
from test_real_runs import real_env  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
START = json.dumps({"type": "start", "protocol": 1}) + "\n"


def test_the_bench_table_names_the_programs_mutants():
    src = (ROOT / "clients" / "go" / "mutants.go").read_text()
    in_go = set(re.findall(r'^\t"([a-z-]+)": ', src, re.M))
    assert in_go == {m[0] for m in B.MUTANTS}
    for _, scenario, _, _ in B.MUTANTS:
        assert (B.SCEN / scenario).is_file() and scenario in B.DECLARED


@pytest.mark.parametrize("args, words", [
    (["--mutant", "nope"], 'unknown mutant \\"nope\\"; known: ack-before-listener, ack-failed, nack-succeeded, '
                           'orderly-as-concurrent, skip-message, stop-early'),
    (["--verbose"], 'unknown argument \\"--verbose\\"'),
])
def test_the_program_refuses_what_it_does_not_know(go_client, args, words):  # noqa: F811
    r = subprocess.run([str(go_client), *args], input=START, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    line = json.loads(r.stdout.strip().splitlines()[-1])
    assert line["type"] == "error" and words.replace('\\"', '"') in line["message"]


@pytest.mark.real
def test_every_mutant_is_killed_with_the_id_it_breaks(real_env, go_client, tmp_path):  # noqa: F811
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "bench.client_mutants", "--json", "--client",
                        str(go_client), "--out", str(tmp_path)], capture_output=True, text=True, timeout=2400, cwd=ROOT)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    d = json.loads(r.stdout)
    rows = {(x["mutant"], x["scenario"]): x for x in d["rows"]}
    planned = B.plan(None)
    assert {p["where"] for p in planned} == {"driver", "library"} and len(planned) == len(B.MUTANTS) + len(L.MUTANTS)
    for p in planned:
        row = rows[(p["mutant"], p["scenario"])]
        assert row["status"] == "failed" and p["expected"] in row["got"], row
    for scenario in {p["scenario"] for p in planned}:
        assert rows[("(none: control)", scenario)]["status"] == "passed", rows[("(none: control)", scenario)]
    assert d["killed"] == d["mutants"] == len(planned) and r.returncode == 0
