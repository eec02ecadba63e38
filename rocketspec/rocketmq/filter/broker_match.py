"""The broker's whole filter decision for one message of a pull.

RocketMQ filters a pull in two steps (``DefaultMessageStore.getMessage``):

1. ``isMatchedByConsumeQueue(tagsCode, cqExt)`` on the consume-queue entry - for a TAG
   subscription the hash-code test of :func:`~.tags.broker_tag_match`; for SQL92 it
   passes (a bloom-filter bitmap can only reject what step 2 rejects, so it is not
   modelled);
2. ``isMatchedByCommitLog(msg, properties)`` on the stored message - TAG passes; SQL92
   evaluates the compiled expression on the message properties and matches only on
   exactly TRUE (:func:`~.sql92.sql92_match`).

With the broker setting ``filterSupportRetry`` the filter is
``ExpressionForRetryMessageFilter``: on a retry topic (``%RETRY%group``, whose
subscription is always SUB_ALL of type TAG) step 2 reads the message's ``RETRY_TOPIC``
property and applies the SQL92 filter that the same group registered for that original
topic, if any. Before #7039 (5.1.4) that happened for TAG-type subscriptions too, which is
how the retry subscription reaches it; from 5.1.4 a TAG-type subscription returns TRUE
first, so the original topic's SQL92 filter is no longer applied to retry messages. The
profile switch ``retry_tag_filter_fixed`` selects the behaviour.

Not decided here: SQL92 needs the broker setting ``enablePropertyFilter`` (default false),
otherwise the pull itself fails with SYSTEM_ERROR before any message is looked at - the
caller checks that before filtering.
"""
from __future__ import annotations

from collections.abc import Mapping

from rocketspec.rocketmq.profiles import Profile, get_profile
from .sql92 import Expression, FilterCompileError, compile_sql92, sql92_match
from .tags import SubscriptionData, broker_tag_match


def _compiled(sub: SubscriptionData, profile: Profile) -> Expression:
    return compile_sql92(sub.sub_string, profile)


def broker_matches(
    subscription: SubscriptionData | None,
    compiled_sql: Expression | None,
    *,
    tags_code: int | None,
    props: Mapping[str, str],
    is_retry_topic: bool,
    filter_support_retry: bool,
    original_topic_subscription: SubscriptionData | None = None,
    profile: Profile | str | None,
) -> bool:
    """Whether the broker returns this message to a pull, as the profile's release does.

    :param subscription: the group's subscription to the topic being pulled (for a retry
        topic, the retry subscription: SUB_ALL of type TAG as clients build it). None
        means no subscription data, which RocketMQ's filter lets through.
    :param compiled_sql: the compiled expression of an SQL92 ``subscription`` (RocketMQ's
        ``ConsumerFilterData``); None to compile ``subscription.sub_string`` here. A
        subscription that does not compile raises :class:`FilterCompileError` - the broker
        never registers such a filter, so a caller should have refused it earlier.
        Ignored for TAG subscriptions.
    :param tags_code: the consume-queue tags code of the message (:func:`~.tags.tags_code`
        of its tags; any integer, compared as Java's ``intValue``), or None when the
        consume queue holds no legal code (then the tag test passes).
    :param props: the message's properties as the broker decodes them (strings).
    :param is_retry_topic: the pulled topic is a retry topic (its name starts with
        ``%RETRY%``).
    :param filter_support_retry: the broker setting ``filterSupportRetry`` (default false):
        use ``ExpressionForRetryMessageFilter`` instead of ``ExpressionMessageFilter``.
    :param original_topic_subscription: for a retry topic with ``filter_support_retry``:
        the same group's subscription to the topic named by the message's ``RETRY_TOPIC``
        property (None when the property is absent or the group has no such
        subscription). Only an SQL92 subscription registers filter data; a TAG one, or
        None, or one that does not compile, means "no filter data", which matches.
    :param profile: a :class:`Profile` or profile name (None: the default profile). Its
        switches ``retry_tag_filter_fixed`` (#7039) and ``sql_string_functions`` apply.
    """
    prof = get_profile(profile)

    # Step 1: the consume queue (ExpressionMessageFilter.isMatchedByConsumeQueue).
    if subscription is None:
        return True
    if subscription.is_tag_type and not broker_tag_match(subscription, tags_code):
        return False

    # Step 2: the commit log.
    if not filter_support_retry:
        # ExpressionMessageFilter.isMatchedByCommitLog
        if subscription.is_tag_type:
            return True
        expression = compiled_sql if compiled_sql is not None else _compiled(subscription, prof)
        return sql92_match(expression, props)

    # ExpressionForRetryMessageFilter.isMatchedByCommitLog
    if subscription.is_tag_type and (prof.retry_tag_filter_fixed or not is_retry_topic):
        return True
    if is_retry_topic:
        original = original_topic_subscription
        if original is None or original.is_tag_type:
            return True  # no filter data registered for the original topic
        try:
            expression = _compiled(original, prof)
        except FilterCompileError:
            return True  # never registered, so no filter data
        return sql92_match(expression, props)
    expression = compiled_sql if compiled_sql is not None else _compiled(subscription, prof)
    return sql92_match(expression, props)
