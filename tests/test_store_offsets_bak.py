"""A client's offsets.json read as RocketMQ reads it: random real run 18234 (5.5.1 broker, 5.5.0
client) left 127.0.0.1@g1c1's file of GID_r1 empty (the client stopped inside MixAll.string2File,
which writes the file last) beside its .bak; LocalFileOffsetStore.readLocalOffset loads the .bak
when the file is empty or unreadable (5.5.0 lines 230-251), so the oracle reads the .bak too.
The run was 'incomplete' ("no offsetTable") before."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocketspec.conformance.store_contents import StoreReadError, read_local_offsets

RUN = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-18234-empty-offsets-file"


def test_an_empty_offsets_file_is_read_from_its_bak():
    [o] = read_local_offsets(RUN)
    assert (o.client, o.group) == ("127.0.0.1@g1c1", "GID_r1")
    assert o.path.endswith("offsets.json.bak")
    assert o.table == {("TopicR", "broker-a", 2): 16, ("TopicR", "broker-a", 3): 23,
                       ("TopicR", "broker-a", 0): 24, ("TopicR", "broker-a", 1): 18}


def test_without_a_readable_bak_it_is_still_an_error_naming_both(tmp_path):
    shutil.copytree(RUN, tmp_path / "run")
    bak = next((tmp_path / "run").glob(".rocketmq_offsets/*/*/offsets.json.bak"))
    bak.write_text("")
    with pytest.raises(StoreReadError, match=r"offsets\.json: no offsetTable \(nor in offsets\.json\.bak\)"):
        read_local_offsets(tmp_path / "run")
    bak.unlink()
    with pytest.raises(StoreReadError, match=r"offsets\.json: no offsetTable$"):
        read_local_offsets(tmp_path / "run")


def test_rejudge_judges_a_run_whose_records_could_not_be_read(tmp_path):
    """A run recorded whole that was 'incomplete' only because the oracle could not read
    RocketMQ's records is judged again by --rejudge; one still unreadable stays incomplete."""
    import gzip
    import json

    from rocketspec.conformance.real_random import reclassify

    src = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-17169-go-subscriptions-differ"
    out = tmp_path / "runs"
    for seed, bad in ((1, False), (2, True)):
        f = out / f"seed-{seed}"
        shutil.copytree(src, f)
        for packed in (f / "trace.jsonl.gz", f / "run" / "store" / "commitlog" / "00000000000000000000.gz"):
            packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
            packed.unlink()
        r = json.loads((f / "result.json").read_text()) if (f / "result.json").exists() else {}
        r.update(seed=seed, **{"class": "incomplete"}, events=1, ended="quiescent",
                 note="RocketMQ's records of the run could not be read: x: no offsetTable", folder=str(f))
        (f / "result.json").write_text(json.dumps(r))
        if bad:
            d = f / "run" / ".rocketmq_offsets" / "c" / "g"
            d.mkdir(parents=True)
            (d / "offsets.json").write_text("")
    res = {r.seed: r for r in reclassify(out)}
    assert res[1].cls != "incomplete" and "read when judged again" in res[1].note
    assert res[2].cls == "incomplete" and "no offsetTable" in res[2].note
