"""Retry and dead-letter facts: the per-group topics and the delay level of a retry (digest
sections 5 and 7), and how long a listener call may outlive the client lease (A-LEASE-MARGIN).

A consumer group's failed messages go to `%RETRY%<group>`, through the schedule topic's delay
levels, and after maxReconsumeTimes to `%DLQ%<group>`. A retry asked for with delay level 0
("let the broker choose") waits at level `3 + reconsumeTimes` (SendMessageProcessor
.consumerSendMsgBack; the client's fallback producer and the orderly consumer send the same
level), capped at the delay table's highest level.
"""
from __future__ import annotations

RETRY_PREFIX = "%RETRY%"        # MixAll.RETRY_GROUP_TOPIC_PREFIX
DLQ_PREFIX = "%DLQ%"            # MixAll.DLQ_GROUP_TOPIC_PREFIX
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # TopicValidator.RMQ_SYS_SCHEDULE_TOPIC

FIRST_RETRY_LEVEL = 3           # the delay level of a first retry (reconsumeTimes 0): 10 s by default
# ProcessQueue.cleanExpiredMsg sends a message whose listener call outlived consumeTimeout back
# with this fixed level, whatever its reconsumeTimes: a literal of its own, not the rule below.
CLEAN_EXPIRED_DELAY_LEVEL = 3


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_PREFIX)


def group_of_topic(topic: str) -> str | None:
    """The group a %RETRY% or %DLQ% topic belongs to; None for any other topic."""
    for prefix in (RETRY_PREFIX, DLQ_PREFIX):
        if topic.startswith(prefix):
            return topic[len(prefix):]
    return None


def retry_delay_level(reconsume_times: int) -> int:
    """The delay level of a retry the broker chooses, before the cap at the highest level."""
    return FIRST_RETRY_LEVEL + reconsume_times


def lease_margin(broker_lock_ms: int, client_lease_ms: int) -> int:
    """A-LEASE-MARGIN: how long a listener call may outlive the client lease before another
    client can take the broker lock (broker lock lifetime - client lease)."""
    return broker_lock_ms - client_lease_ms
