"""`rocketspec gate --config examples/go-client/gate.toml` on real RocketMQ 4.9.8 (marker
`real`, about 100 s): upstream's rocketmq-client-go v2.1.2 driven through the driver protocol
passes the gate, its one known finding (the orderly over-retry, H-RETRY-1) declared; the verdict
table and the coverage report are printed before the verdict. Skips without Java, RocketMQ or Go,
unless ROCKETSPEC_REQUIRE_REAL=1 (then a failure)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from test_go_client_real import go_client  # noqa: F401  (the fixture: make go-client)
from test_real_runs import real_env  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.real


def test_the_go_client_passes_its_gate(real_env, go_client, tmp_path):  # noqa: F811
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "gate", "--config",
                        str(ROOT / "examples" / "go-client" / "gate.toml"), "--out-dir", str(tmp_path / "out"),
                        "--junit", str(tmp_path / "gate.xml")],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    out = r.stdout
    # Go's orderly over-retry: check's INV-RETRY-1 (the part the client-reports level judges) and history's H-RETRY-1
    row = next(x for x in out.splitlines() if x.startswith("| real-orderly-dlq |"))
    assert "| INV-RETRY-1 (" in row and row.endswith("| H-RETRY-1 | H-RETRY-1 | H-RETRY-1, INV-RETRY-1 | passed (declared) |"), row
    for sc in ("real-basic", "real-retry-dlq"):
        row = next(x for x in out.splitlines() if x.startswith(f"| {sc} |"))
        assert row.endswith("| holds | holds | passed |"), row
    assert "coverage of 3 run(s) (observed: broker, client_reports)" in out
    assert "    INV-DLQ-1: exercised:" in out
    assert out.rstrip().splitlines()[-1].startswith("gate: PASSED (exit 0): 12 cases")
    # the Go library's own message traces, judged as a third case
    assert "real-orderly-dlq [rocketmq-client-go v2.1.2] msgtrace history: passed" in out
    assert (tmp_path / "out" / "client" / "real-orderly-dlq.jsonl").is_file()
