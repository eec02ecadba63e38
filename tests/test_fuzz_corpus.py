"""Replay the fuzz corpus (tests/fuzz_corpus/): every input that ever crashed, hung, ran over
1 GB or was rejected without a located message must now get a clean outcome: a verdict, an
incomplete run, or exit 2 with a message naming the file and the place in it.

Each entry is an input file and a sidecar <hash>.case.json with the command and what it did when
bench/fuzz_inputs.py found it. `python -m bench.fuzz_inputs --replay` lists every entry's
outcome now."""
from __future__ import annotations

import os

import pytest

from bench import fuzz_inputs as fz

ENTRIES = fz.corpus_entries()


def _id(meta: dict) -> str:
    return f"{meta['kind']}/{os.path.basename(meta['sidecar'])[:-len(fz.SIDECAR)]}-{meta['outcome']}"


def test_corpus_is_small_and_well_formed():
    assert len(ENTRIES) <= 200
    for meta in ENTRIES:
        assert meta["kind"] in fz.KINDS and meta["outcome"] in fz.FAILURES, meta["sidecar"]
        assert meta.get("directory") or os.path.exists(meta["data_path"]), meta["sidecar"]
        assert os.path.getsize(meta["data_path"]) < 2_000_000 if meta.get("data_path") else True
    sigs = [m["signature"] for m in ENTRIES]
    assert len(sigs) == len(set(sigs)), "one entry per signature"


@pytest.mark.parametrize("meta", ENTRIES, ids=[_id(m) for m in ENTRIES])
def test_corpus_entry_gets_a_clean_outcome(meta):
    r = fz.run_one(fz.corpus_input(meta))
    if r["outcome"] not in fz.CLEAN:
        rel = os.path.relpath(meta.get("data_path") or meta["sidecar"], fz.REPO)
        cmd = " ".join(a.replace("{input}", rel).replace("{dir}", "/tmp") for a in meta["argv"])
        pytest.fail(f"{rel}: {r['outcome']} [{r['signature']}]\n  command: rocketspec {cmd}\n"
                    f"  found as: {meta['outcome']} [{meta['signature']}]\n"
                    f"  now: {' '.join(r['message'].split())[:300]}", pytrace=False)
