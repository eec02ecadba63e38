"""The explorer's copy-on-write states and incremental fingerprints against their definitions:
on every state of an exploration, the declared copy shapes hold, a state is never changed after
it was sealed (its successors were copied, not written into it), and two states get the same
fingerprint exactly when their canonical forms (`Canon`, uncached) are equal."""
from __future__ import annotations

from dataclasses import replace

import pytest

from rocketspec.model_checks.canon import check_copy_shapes
from rocketspec.model_checks.explorer import Explorer
from rocketspec.model_checks.scopes import load_scope


@pytest.mark.parametrize("name,over", [("tiny", {}), ("bugs-orderly", {"failures": 1, "faults": 0, "consumers": 1}),
                                       ("bugs-broadcast", {"faults": 1})])
def test_fingerprints_follow_the_canonical_form(name, over):
    scope = replace(load_scope(name, **over), symmetry=False)      # one image: forms compare directly
    ex = Explorer(scope, "rocketmq-5.3.3")
    seen = []                   # (node, fingerprint, canonical form when fingerprinted)
    shape_errors = []
    fingerprints = ex._fingerprints

    def record(node):
        out = fingerprints(node)
        form = (ex.canon(node.st, node.now), tuple(sorted(node.aux.items())), node.budget,
                ex.schedule_phase(node.now))
        seen.append((node, out[0], form))
        shape_errors.extend(check_copy_shapes(node.st))
        return out

    ex._fingerprints = record
    res = ex.run()
    assert res.complete and len(seen) > 500
    assert shape_errors == []
    by_form, by_fp = {}, {}
    for node, fp, form in seen:
        assert by_form.setdefault(form, fp) == fp          # equal forms, equal fingerprints
        assert by_fp.setdefault(fp, form) == form          # equal fingerprints, equal forms
        # sealed states stay as they were: exploring their successors did not write into them
        assert (ex.canon(node.st, node.now), tuple(sorted(node.aux.items())), node.budget,
                ex.schedule_phase(node.now)) == form
