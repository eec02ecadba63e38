"""Messages as the broker stores them and as the client holds them."""
from __future__ import annotations

from rocketspec.rocketmq.retry import (DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC,  # noqa: F401
                                       dlq_topic, is_retry_topic, retry_topic)


def reset_retry_topic(msgs, group: str) -> None:
    """resetRetryAndNamespace, before every listener call (concurrent and orderly): a message
    pulled from the group's own %RETRY% topic shows its original topic to the listener."""
    group_retry = retry_topic(group)
    for m in msgs:
        if m.topic == group_retry and m.retry_topic:
            m.topic = m.retry_topic


class Message:
    """One stored copy. The client works on its own copy (`clone`), whose reconsume_times it
    may raise in memory (send-back failure, orderly local retry) without touching the store.
    Properties are never changed in place (a new copy gets a new dict), so clones share them."""

    __slots__ = ("msg_id", "origin_msg_id", "topic", "broker", "queue", "offset", "tags", "tags_code",
                 "keys", "props", "body_size", "reconsume_times", "retry_topic", "delay_level",
                 "store_ts", "real_topic", "real_queue", "deliver_ts", "consume_start_ts", "max_reconsume_times")

    def __init__(self, *, msg_id=None, origin_msg_id=None, topic, broker=None, queue=0, offset=-1, tags=None,
                 tags_code=0, keys=None, props=None, body_size=128, reconsume_times=0, retry_topic=None,
                 delay_level=0, store_ts=0, real_topic=None, real_queue=None, deliver_ts=None,
                 max_reconsume_times=None):
        self.msg_id = msg_id
        self.origin_msg_id = origin_msg_id
        self.topic = topic
        self.broker = broker
        self.queue = queue
        self.offset = offset
        self.tags = tags
        self.tags_code = tags_code
        self.keys = keys
        self.props = props or {}
        self.body_size = body_size
        self.reconsume_times = reconsume_times
        self.retry_topic = retry_topic
        self.delay_level = delay_level
        self.store_ts = store_ts
        self.real_topic = real_topic
        self.real_queue = real_queue
        self.deliver_ts = deliver_ts
        self.consume_start_ts = None
        self.max_reconsume_times = max_reconsume_times

    def clone(self) -> "Message":
        m = Message.__new__(Message)
        m.msg_id, m.origin_msg_id, m.topic, m.broker = self.msg_id, self.origin_msg_id, self.topic, self.broker
        m.queue, m.offset, m.tags, m.tags_code = self.queue, self.offset, self.tags, self.tags_code
        m.keys, m.props, m.body_size = self.keys, self.props, self.body_size
        m.reconsume_times, m.retry_topic, m.delay_level = self.reconsume_times, self.retry_topic, self.delay_level
        m.store_ts, m.real_topic, m.real_queue, m.deliver_ts = self.store_ts, self.real_topic, self.real_queue, self.deliver_ts
        m.consume_start_ts, m.max_reconsume_times = self.consume_start_ts, self.max_reconsume_times
        return m

    def __repr__(self):
        return f"Message({self.msg_id} {self.topic}/{self.broker}/{self.queue}@{self.offset} r={self.reconsume_times})"
