"""Tags: the digest's vectors (section 9) and properties of the hash and the two checks."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.rocketmq.filter import (
    SUB_ALL,
    SubscriptionData,
    SubscriptionError,
    broker_tag_match,
    build_subscription,
    client_tag_match,
    java_string_hash,
    tags_code,
)
from rocketspec.rocketmq.filter.tags import java_trim, to_int32


def reference_hash(s: str) -> int:
    """An independent computation: the polynomial sum s[i]*31^(n-1-i) over UTF-16 units,
    in unbounded integers, then reduced to a signed 32-bit value."""
    raw = s.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]
    n = len(units)
    total = sum(u * 31 ** (n - 1 - i) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


# ---- digest vectors --------------------------------------------------------------------

def test_digest_tags_codes():
    assert tags_code("TagA") == 2598919          # [ran]
    assert tags_code("*") == 42                  # [ran]
    assert tags_code(None) == 0
    assert tags_code("") == 0


def test_java_hash_known_values():
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2**31      # Integer.MIN_VALUE
    assert java_string_hash("f5a5a608") == 0                      # a non-empty tag with code 0
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112  # the classic collision
    # a supplementary character hashes as its surrogate pair
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00
    assert java_string_hash("\ud83d") == 0xD83D                   # a lone surrogate


@given(st.text())
def test_java_hash_equals_reference(s):
    assert java_string_hash(s) == reference_hash(s)


@given(st.lists(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(), max_size=20))
def test_java_hash_with_lone_surrogates(chars):
    s = "".join(chars)
    assert java_string_hash(s) == reference_hash(s)
    assert -2**31 <= java_string_hash(s) < 2**31


# ---- FilterAPI -------------------------------------------------------------------------

@pytest.mark.parametrize("sub", [None, "", "*"])
def test_sub_all(sub):
    s = build_subscription(sub)
    assert s == SubscriptionData(sub_string=SUB_ALL, tags_set=(), code_set=(), expression_type="TAG")
    assert s.is_sub_all


def test_split_trim_drop_empty():
    s = build_subscription(" TagA ||TagB|| ||  TagC ")
    assert s.sub_string == " TagA ||TagB|| ||  TagC "
    assert s.tags_set == ("TagA", "TagB", "TagC")
    assert s.code_set == (2598919, java_string_hash("TagB"), java_string_hash("TagC"))


def test_star_forms():
    assert build_subscription(" * ").tags_set == ("*",)       # not SUB_ALL
    assert not build_subscription(" * ").is_sub_all
    assert build_subscription(" * ").code_set == (42,)
    assert build_subscription("A || *").tags_set == ("A", "*")


def test_split_like_java():
    assert build_subscription("|||").tags_set == ("|",)
    assert build_subscription("A|B").tags_set == ("A|B",)
    assert build_subscription("A||").tags_set == ("A",)
    assert build_subscription("||A").tags_set == ("A",)
    empty = build_subscription(" || ")
    assert empty.tags_set == () and not empty.is_sub_all
    for only_bars in ("||", "||||"):
        with pytest.raises(SubscriptionError, match="split error"):
            build_subscription(only_bars)


def test_duplicates_and_colliding_tags():
    s = build_subscription("A || A || Aa || BB")
    assert s.tags_set == ("A", "Aa", "BB")
    assert s.code_set == (65, 2112)


def test_java_trim_is_not_unicode_strip():
    assert java_trim("\x00\x1f a \t") == "a"
    assert java_trim("\u00a0a\u2003") == "\u00a0a\u2003"
    assert build_subscription("\u00a0A").tags_set == ("\u00a0A",)


def test_sql92_subscription():
    s = build_subscription("a > 1 || b", "SQL92")
    assert s == SubscriptionData(sub_string="a > 1 || b", expression_type="SQL92")
    for empty in (None, ""):
        with pytest.raises(SubscriptionError):
            build_subscription(empty, "SQL92")
    with pytest.raises(SubscriptionError):
        build_subscription("a", "CLASS")
    assert build_subscription("A", None).expression_type == "TAG"


# ---- broker and client checks ----------------------------------------------------------

def test_broker_tag_match():
    sub = build_subscription("TagA || TagB")
    assert broker_tag_match(sub, tags_code("TagA"))
    assert not broker_tag_match(sub, tags_code("TagC"))
    assert not broker_tag_match(sub, 0)                    # untagged never matches a tag list
    assert broker_tag_match(sub, None)                     # unknown code passes
    assert broker_tag_match(build_subscription("*"), 0)
    assert broker_tag_match(None, 123)
    assert broker_tag_match(build_subscription("a = 1", "SQL92"), 5)
    # the consume queue holds a long; the broker compares its int value
    assert broker_tag_match(sub, tags_code("TagA") + 2**32)


def test_hash_collision_passes_broker_not_client():
    sub = build_subscription("Aa")
    assert broker_tag_match(sub, tags_code("BB"))
    assert not client_tag_match(sub, "BB")
    assert client_tag_match(sub, "Aa")


def test_tag_hashing_to_zero_matches_untagged_on_broker_only():
    sub = build_subscription("f5a5a608")
    assert broker_tag_match(sub, 0)
    assert not client_tag_match(sub, None)


def test_blank_subscription_is_not_sub_all():
    """StringUtils.isEmpty(" ") is false: a blank subscription has no tags but is not
    SUB_ALL, so the broker passes only unknown codes while the client keeps everything."""
    sub = build_subscription(" ")
    assert sub.sub_string == " " and sub.tags_set == () and not sub.is_sub_all
    assert not broker_tag_match(sub, 0) and not broker_tag_match(sub, tags_code("TagA"))
    assert broker_tag_match(sub, None)
    assert client_tag_match(sub, "TagA")


def test_client_tag_match():
    sub = build_subscription("TagA || TagB")
    assert client_tag_match(sub, "TagA")
    assert not client_tag_match(sub, None)
    assert not client_tag_match(sub, " TagA")
    assert client_tag_match(build_subscription("*"), None)
    assert client_tag_match(build_subscription(" || "), "anything")
    assert client_tag_match(build_subscription("a = 1", "SQL92"), None)


@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=5), st.text(max_size=8))
def test_client_implies_broker(tags, tag):
    """Whatever the client keeps, the broker passed (the client check is the stricter) -
    for subscriptions that have tags (see test_blank_subscription_is_not_sub_all)."""
    sub = build_subscription(" || ".join(t.replace("|", "") or "x" for t in tags))
    if sub.tags_set and client_tag_match(sub, tag or None):
        assert broker_tag_match(sub, tags_code(tag or None))


@given(st.integers())
def test_to_int32(n):
    v = to_int32(n)
    assert -2**31 <= v < 2**31 and (v - n) % 2**32 == 0


# ---- the broker's whole decision (broker_match) ----------------------------------------

from rocketspec.rocketmq.filter import FilterCompileError, broker_matches, compile_sql92  # noqa: E402

P4, P5 = "rocketmq-4.9.8", "rocketmq-5.3.3"


def decide(sub, *, props=None, tags=None, retry=False, fsr=False, original=None, profile=P5, compiled=None):
    return broker_matches(sub, compiled, tags_code=tags_code(tags), props=props or {},
                          is_retry_topic=retry, filter_support_retry=fsr,
                          original_topic_subscription=original, profile=profile)


@pytest.mark.parametrize("profile", [P4, P5])
@pytest.mark.parametrize("fsr", [False, True])
def test_broker_tag_subscriptions(profile, fsr):
    sub = build_subscription("TagA || TagB")
    assert decide(sub, tags="TagA", fsr=fsr, profile=profile)
    assert not decide(sub, tags="TagC", fsr=fsr, profile=profile)
    assert not decide(sub, tags=None, fsr=fsr, profile=profile)          # untagged: code 0
    assert decide(sub, tags="BB", fsr=fsr, profile=profile) is False
    assert decide(build_subscription("Aa"), tags="BB", fsr=fsr, profile=profile)  # collision passes
    assert decide(build_subscription("*"), tags=None, fsr=fsr, profile=profile)
    assert decide(None, tags="x", fsr=fsr, profile=profile)
    assert broker_matches(sub, None, tags_code=None, props={}, is_retry_topic=False,
                          filter_support_retry=fsr, profile=profile)      # unknown code passes


@pytest.mark.parametrize("profile", [P4, P5])
@pytest.mark.parametrize("fsr", [False, True])
def test_broker_sql92_subscriptions(profile, fsr):
    sub = build_subscription("a > 5", "SQL92")
    assert decide(sub, props={"a": "6"}, fsr=fsr, profile=profile)
    assert not decide(sub, props={"a": "5"}, fsr=fsr, profile=profile)
    assert not decide(sub, props={}, fsr=fsr, profile=profile)             # null: no match
    assert not decide(sub, props={"a": "abc"}, fsr=fsr, profile=profile)   # error: no match
    assert decide(sub, props={"a": "6"}, tags="whatever", fsr=fsr, profile=profile)
    compiled = compile_sql92("a < 5", profile)                             # the registered filter wins
    assert decide(sub, props={"a": "1"}, fsr=fsr, profile=profile, compiled=compiled)
    with pytest.raises(FilterCompileError):
        decide(build_subscription("a >", "SQL92"), fsr=fsr, profile=profile)


@pytest.mark.parametrize("profile", [P4, P5])
def test_retry_topic_without_filter_support_retry_passes_everything(profile):
    retry_sub = build_subscription("*")
    original = build_subscription("a > 5", "SQL92")
    for props in ({"a": "1"}, {}, {"a": "x"}):
        assert decide(retry_sub, props=props, tags="TagZ", retry=True, fsr=False,
                      original=original, profile=profile)


def test_filter_support_retry_before_7039_applies_the_original_sql():
    retry_sub = build_subscription("*")
    original = build_subscription("a > 5", "SQL92")
    assert not decide(retry_sub, props={"a": "1"}, retry=True, fsr=True, original=original, profile=P4)
    assert decide(retry_sub, props={"a": "9"}, retry=True, fsr=True, original=original, profile=P4)
    assert not decide(retry_sub, props={"a": "x"}, retry=True, fsr=True, original=original, profile=P4)
    # no filter data for the original topic: match
    assert decide(retry_sub, props={"a": "1"}, retry=True, fsr=True, original=None, profile=P4)
    assert decide(retry_sub, props={"a": "1"}, retry=True, fsr=True,
                  original=build_subscription("TagA"), profile=P4)
    assert decide(retry_sub, props={"a": "1"}, retry=True, fsr=True,
                  original=build_subscription("a >", "SQL92"), profile=P4)


def test_filter_support_retry_after_7039_passes_tag_type_retry_subscriptions():
    retry_sub = build_subscription("*")
    original = build_subscription("a > 5", "SQL92")
    for props in ({"a": "1"}, {"a": "9"}, {}):
        assert decide(retry_sub, props=props, retry=True, fsr=True, original=original, profile=P5)
    # an SQL92-typed subscription on a retry topic still reads the original topic's filter
    sql_retry_sub = build_subscription("b = 1", "SQL92")
    assert not decide(sql_retry_sub, props={"a": "1", "b": "1"}, retry=True, fsr=True,
                      original=original, profile=P5)
    assert decide(sql_retry_sub, props={"a": "9"}, retry=True, fsr=True, original=original, profile=P5)


@pytest.mark.parametrize("profile", [P4, P5])
def test_retry_topic_with_a_tag_list_still_tests_codes(profile):
    sub = build_subscription("TagA")
    assert not decide(sub, tags="TagB", retry=True, fsr=False, profile=profile)
    assert not decide(sub, tags="TagB", retry=True, fsr=True, profile=profile)
