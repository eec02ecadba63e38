"""The broker's per-pull message filter: which stored messages a pull may return.

The decision itself (tags hash, SQL92, retry topics, filterSupportRetry) is RocketMQ's
filter language, defined once in `rocketspec.rocketmq.filter`; this module only gathers what the
broker knows for one pull request.
"""
from __future__ import annotations

from ..message import is_retry_topic


def _match_all(m) -> bool:
    return True


def pull_filter(broker, req):
    sub = req.subscription
    sql = req.sql
    retry = is_retry_topic(req.topic)
    support_retry = broker.filter_support_retry
    profile = broker.profile
    subs = broker.subscriptions
    group = req.group

    if sub is None:
        return _match_all
    if sub.expression_type == "TAG" and sub.sub_string == "*" and not (retry and support_retry):
        return _match_all  # SUB_ALL: the common fast path

    from rocketspec.rocketmq.filter import broker_matches

    def matches(m) -> bool:
        original = subs.get((group, m.retry_topic)) if retry and m.retry_topic else None
        return broker_matches(sub, sql, tags_code=m.tags_code, props=m.props, is_retry_topic=retry,
                              filter_support_retry=support_retry, original_topic_subscription=original,
                              profile=profile)

    return matches
