"""The gRPC PushConsumer and the proxy's part in it: facts of rocketmq-client-java 5.2.0
(PushConsumerImpl, ProcessQueueImpl, FifoConsumeService, StandardConsumeService,
CustomizedBackoffRetryPolicy) and of the 5.5.0 proxy (ReceiveMessageActivity,
GrpcClientSettingsManager, DefaultReceiptHandleManager, RenewStrategyPolicy).

A PushConsumer keeps one process queue per assigned queue (the proxy assigns queue -1 of each
broker: every queue) and receives through the proxy, each receive with an attempt id. A receive
that failed with DEADLINE_EXCEEDED is retried with the same attempt id; any other failure, and
every answered receive, draws a new one. The proxy pops with its default invisible time and, for a
receive that asks for auto-renew (a PushConsumer's do), renews each handle it wrote before it runs
out, for up to 3 h.
"""
from __future__ import annotations

# GrpcClientSettingsManager gives the client grpcClientConsumerMaxLongPollingTimeoutMillis as its
# long-polling timeout, and ReceiveMessageActivity clamps the pop's poll time to the same maximum
LONG_POLLING_TIMEOUT_MS = 20_000
REQUEST_TIMEOUT_MS = 3_000              # ClientConfiguration.requestTimeout
# ProcessQueueImpl: a failed receive is retried this long after; a full cache waits this long
RECEIVING_FAILURE_BACKOFF_MS = 1_000
RECEIVING_BACKOFF_WHEN_CACHE_FULL_MS = 1_000
ACK_FAILURE_BACKOFF_MS = 1_000          # ACK_MESSAGE_FAILURE_BACKOFF_DELAY (and nack, forward)
# PushConsumerBuilder: maxCacheMessageCount, shared by the process queues
MAX_CACHE_MESSAGE_COUNT = 1024
RECEIVE_BATCH_SIZE = 32                 # PushConsumerImpl: a receive asks for at most this many

# ProxyConfig: a receive with auto-renew pops with the proxy's invisible time, not the client's
PROXY_DEFAULT_INVISIBLE_MS = 60_000     # defaultInvisibleTimeMills
RENEW_SCHEDULE_PERIOD_MS = 5_000        # renewSchedulePeriodMillis (scheduleRenewTask)
RENEW_AHEAD_MS = 10_000                 # renewAheadTimeMillis: renew a handle this close to its deadline
RENEW_MAX_MS = 3 * 3_600_000            # renewMaxTimeMillis: then the handle is nacked, no longer renewed
INVISIBLE_WHEN_CLEAR_MS = 1_000         # invisibleTimeMillisWhenClear: an offline client's handles
# ReceiveMessageResponseStreamWriter: a message the proxy could not write (the client's stream is
# gone) is changed to come back this soon
NACK_INVISIBLE_MS = 1_000
RENEW_POLICY_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)     # RenewStrategyPolicy

# The group's retry policy as the proxy gives it (SubscriptionGroupConfig's default CUSTOMIZED
# GroupRetryPolicy, CustomizedRetryPolicy.next): the client's next-attempt delay, and the nack
# of a handle past the renew limit
CUSTOMIZED_BACKOFF_S = (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)


def receive_timeout_ms(long_polling_ms: int = LONG_POLLING_TIMEOUT_MS) -> int:
    """ConsumerImpl.receiveMessage: the receive's deadline is its long-polling timeout plus the
    request timeout."""
    return long_polling_ms + REQUEST_TIMEOUT_MS


def retried_attempt_id(attempt_id, deadline_exceeded: bool):
    """ProcessQueueImpl.onFailure: the attempt id of the receive that follows a failed one (None:
    a new one)."""
    return attempt_id if deadline_exceeded else None


def next_attempt_delay_ms(attempt: int) -> int:
    """CustomizedBackoffRetryPolicy.getNextAttemptDelay (attempt >= 1; past the table, its last)."""
    if attempt < 1:
        raise ValueError("attempt must be positive")
    return 1000 * CUSTOMIZED_BACKOFF_S[min(attempt, len(CUSTOMIZED_BACKOFF_S)) - 1]


def renew_due(next_visible: int, now: int) -> bool:
    """scheduleRenewTask: a handle is renewed once its deadline is within renewAheadTimeMillis."""
    return next_visible - now <= RENEW_AHEAD_MS


def renew_invisible_ms(renew_times: int) -> int:
    """RenewStrategyPolicy.nextDelayDuration: the invisible time of the next renewal."""
    return RENEW_POLICY_MS[min(max(renew_times, 0), len(RENEW_POLICY_MS) - 1)]


def renew_expired(consume_ts: int, now: int) -> bool:
    """startRenewMessage: past renewMaxTimeMillis since it was handed out, a handle is nacked
    with the group's retry delay instead of renewed."""
    return now - consume_ts >= RENEW_MAX_MS


def retry_policy_delay_ms(reconsume_times: int) -> int:
    """CustomizedRetryPolicy.nextDelayDuration(reconsumeTimes): the STOP_RENEW nack's time, at
    index reconsumeTimes + 2 (the old delay-level table's offset)."""
    return 1000 * CUSTOMIZED_BACKOFF_S[min(max(reconsume_times, 0) + 2, len(CUSTOMIZED_BACKOFF_S) - 1)]
