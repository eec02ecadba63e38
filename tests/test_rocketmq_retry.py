"""RocketMQ's retry facts as rocketspec.rocketmq.retry states them once: the group topics, the
delay level of a retry, and the lease margin."""
from __future__ import annotations

from hypothesis import given, strategies as hs

from rocketspec.reference import message
from rocketspec.rocketmq.delays import DEFAULT_DELAY_LEVELS, parse_delay_levels
from rocketspec.rocketmq.retry import (CLEAN_EXPIRED_DELAY_LEVEL, dlq_topic, group_of_topic, is_retry_topic,
                                       lease_margin, retry_delay_level, retry_topic)

_group = hs.text(min_size=1, max_size=12)


@given(_group)
def test_a_groups_retry_and_dlq_topics_name_the_group(group):
    assert retry_topic(group) == "%RETRY%" + group and dlq_topic(group) == "%DLQ%" + group
    assert group_of_topic(retry_topic(group)) == group == group_of_topic(dlq_topic(group))
    assert is_retry_topic(retry_topic(group)) and not is_retry_topic(dlq_topic(group))


@given(_group)
def test_a_plain_topic_has_no_group(topic):
    if not topic.startswith(("%RETRY%", "%DLQ%")):
        assert group_of_topic(topic) is None and not is_retry_topic(topic)


@given(hs.integers(min_value=0, max_value=2**31 - 1))
def test_a_retry_waits_at_level_3_plus_reconsume_times(r):
    assert retry_delay_level(r) == 3 + r


def test_a_first_retry_and_an_expired_message_wait_10_s_by_default():
    delays = parse_delay_levels(DEFAULT_DELAY_LEVELS)
    assert delays[retry_delay_level(0) - 1] == 10000 == delays[CLEAN_EXPIRED_DELAY_LEVEL - 1]


def test_the_lease_margin_is_the_broker_lock_less_the_client_lease():
    assert lease_margin(60000, 30000) == 30000 and lease_margin(6000, 10000) == -4000


def test_the_reference_names_the_same_topics():
    assert message.retry_topic is retry_topic and message.dlq_topic is dlq_topic
    assert message.is_retry_topic is is_retry_topic
