"""The spec's own reading of the tag rules (spec.tag_rules) agrees with the tag filter the
reference filters with (rocketspec.rocketmq.filter.tags) on every input: subscription strings (with the
separators, blanks and control characters Java's trim and split treat specially), tags
(colliding hashes, lone surrogates, untagged) and consume-queue codes (any integer, compared as
Java's int). INV-FILTER-1's tag part is a check because these are two readings of the source."""
from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rocketspec.spec import tag_rules
from rocketspec.rocketmq.filter.tags import (SubscriptionError, broker_tag_match, build_subscription,
                                         client_tag_match, tags_code)
from rocketspec.spec.filtering import decide, subscription

# "Aa" and "BB" share a hashCode (2112); "f5a5a608" hashes to 0, an untagged message's code
PIECES = ["A", "B", "Aa", "BB", "*", "f5a5a608", "|", "||", " ", "\t", "\x00", "\x1f", "\x20", "\x21",
          "é", "\ud800", "😀", ""]
exprs = st.one_of(st.none(), st.lists(st.sampled_from(PIECES), max_size=6).map("".join), st.text(max_size=12))
tags = st.one_of(st.none(), st.sampled_from(["A", "B", "Aa", "BB", "*", "f5a5a608", "é", "\ud800", "😀", " A", ""]),
                 st.text(max_size=6))
codes = st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), st.sampled_from([0, 65, 2112, 2112 + 2**32, -1]))


def implementation(expr):
    try:
        return build_subscription(expr, "TAG")
    except SubscriptionError:
        return None


def reading(expr):
    try:
        return tag_rules.parse(expr)
    except ValueError:
        return None


@settings(max_examples=1500, deadline=None)
@given(exprs, tags, codes)
@example(" || ", None, None)
@example("||||", "A", 65)
@example("Aa", "BB", None)
@example(" * ", "*", None)
@example("f5a5a608", None, None)
def test_the_spec_reading_agrees_with_the_implementation(expr, tag, code):
    impl, spec = implementation(expr), reading(expr)
    assert (impl is None) == (spec is None), (expr, impl, spec)
    if impl is None:
        return
    assert tag_rules.tag_code(tag) == tags_code(tag)
    assert tag_rules.broker_keeps(spec, code) == broker_tag_match(impl, code)
    real_code = tags_code(tag)
    assert tag_rules.broker_keeps(spec, real_code) == broker_tag_match(impl, real_code)
    assert tag_rules.client_keeps(spec, tag) == client_tag_match(impl, tag)
    assert spec.every == (impl.sub_string == "*") and spec.tags == frozenset(impl.tags_set)


@given(exprs, tags)
def test_the_spec_decision_is_the_broker_test_then_the_client_test(expr, tag):
    sub = subscription("TAG", expr)
    impl = implementation(expr)
    if impl is None:
        assert sub is None
        return
    b = broker_tag_match(impl, tags_code(tag))
    assert decide(sub, tag, None, {}) == (b, b and client_tag_match(impl, tag))


def test_known_vectors():
    # the digest's facts: a hash collision passes the broker and not the client; untagged
    # messages match no tag list; " * " is the tag "*", not every message
    s = tag_rules.parse("Aa")
    assert tag_rules.broker_keeps(s, tag_rules.tag_code("BB")) and not tag_rules.client_keeps(s, "BB")
    assert not tag_rules.broker_keeps(tag_rules.parse("A || B"), 0)
    assert tag_rules.parse(" * ") == tag_rules.TagSubscription(False, frozenset({"*"}))
    assert tag_rules.tag_code("Aa") == tag_rules.tag_code("BB") == 65 * 31 + 97
    assert tag_rules.tag_code("TagA") == ((84 * 31 + 97) * 31 + 103) * 31 + 65
