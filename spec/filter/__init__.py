"""The filter language of RocketMQ, as the spec's definition (digest section 9).

* Tags: :func:`java_string_hash`, :func:`tags_code`, :class:`SubscriptionData`,
  :func:`build_subscription`, :func:`broker_tag_match`, :func:`client_tag_match`.
"""
from .tags import (
    SQL92,
    SUB_ALL,
    TAG,
    SubscriptionData,
    SubscriptionError,
    broker_tag_match,
    build_subscription,
    client_tag_match,
    java_string_hash,
    tags_code,
)

__all__ = [
    "SQL92", "SUB_ALL", "TAG", "SubscriptionData", "SubscriptionError", "broker_tag_match",
    "build_subscription", "client_tag_match", "java_string_hash", "tags_code",
]
