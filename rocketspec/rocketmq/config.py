"""RocketMQ's configuration keys as traces carry them, their defaults from a profile, and the
rules that read them: the broker's and the client's timing settings, the delay table, and
maxReconsumeTimes as the client resolves it.

A real broker may run with `messageDelayLevel = "1s 1s ..."` or a 6 s broker lock, and a real
client with a 10 s lease; the trace carries that configuration with the component
(`broker_started.config`, `client_started.config`, schema v2, docs/trace-conventions.md).
"""
from __future__ import annotations

from rocketspec.config_files import short as _short_value

from .delays import DelayLevelError, parse_delay_levels
from rocketspec.rocketmq.profiles import CLIENT_TIMING_KEYS

# trace config key -> Profile field giving its default
BROKER_KEYS = {
    "message_delay_level": "delay_levels",                 # messageDelayLevel
    "broker_lock_max_live_ms": "broker_lock_max_live_ms",  # rocketmq.broker.rebalance.lockMaxLiveTime
    "channel_expired_timeout_ms": "channel_expired_ms",    # channelExpiredTimeout
}
CLIENT_KEYS = CLIENT_TIMING_KEYS
# Older spellings the reference used before schema v2 (its broker_config table).
_BROKER_ALIASES = {"lock_max_live_ms": "broker_lock_max_live_ms"}


class BadConfig(ValueError):
    """A configuration value the spec cannot use (reported as bad input with its event)."""


def delay_table(levels: str) -> tuple:
    """messageDelayLevel -> (0, ms of level 1, ms of level 2, ...): level L's delay at index L."""
    try:
        return (0, *parse_delay_levels(str(levels)))
    except DelayLevelError as exc:
        if exc.empty:
            raise BadConfig("message_delay_level: no levels") from None
        raise BadConfig(f"message_delay_level: token {exc.token!r} is not <number><s|m|h|d>") from None


class BrokerLimits:
    __slots__ = ("delay_levels", "delay_ms", "lock_max_live_ms", "channel_expired_ms", "pop_kv")

    def __init__(self, profile, config: dict | None):
        v = _values(profile, config or {}, BROKER_KEYS, _BROKER_ALIASES)
        self.delay_levels = v["message_delay_level"]
        self.delay_ms = delay_table(self.delay_levels)
        self.lock_max_live_ms = v["broker_lock_max_live_ms"]
        self.channel_expired_ms = v["channel_expired_timeout_ms"]
        # the RocksDB POP path (broker_started.config says so for a run that set it)
        kv = (config or {}).get("pop_consumer_kv_service")
        self.pop_kv = profile.pop_consumer_kv_service if kv is None else bool(kv)


class ClientLimits:
    __slots__ = ("lease_ms", "lock_interval_ms", "rebalance_interval_ms", "max_continuous_ms",
                 "persist_interval_ms", "pull_max_idle_ms", "unlock_delay_ms")

    def __init__(self, profile, config: dict | None):
        v = _values(profile, config or {}, CLIENT_KEYS, {})
        self.lease_ms = v["client_lock_max_live_ms"]
        self.lock_interval_ms = v["lock_interval_ms"]
        self.rebalance_interval_ms = v["rebalance_interval_ms"]
        self.max_continuous_ms = v["max_time_consume_continuously_ms"]
        self.persist_interval_ms = v["persist_consumer_offset_interval_ms"]
        self.pull_max_idle_ms = v["pull_max_idle_ms"]
        self.unlock_delay_ms = v["unlock_delay_ms"]


def _values(profile, config, keys, aliases):
    out = {}
    for key, field in keys.items():
        val = config.get(key)
        if val is None:
            alias = next((a for a, k in aliases.items() if k == key and config.get(a) is not None), None)
            val = config.get(alias) if alias else None
        if val is None:
            val = getattr(profile, field)
        elif key != "message_delay_level" and (type(val) is not int or val < 0):
            raise BadConfig(f"{key}: expected a non-negative integer (ms), got {_short_value(val)}")
        elif key == "message_delay_level" and not isinstance(val, str):
            raise BadConfig(f"{key}: expected RocketMQ's string, e.g. '1s 5s 10s', got {_short_value(val)}")
        out[key] = val
    return out


def resolve_max_reconsume(configured: int, orderly: bool, default: int) -> int | None:
    """maxReconsumeTimes as the client applies it: its setting; -1 means `default` (16) for a
    concurrent consumer (getMaxReconsumeTimes) and no limit (None) for an orderly one
    (Integer.MAX_VALUE)."""
    if configured == -1:
        return None if orderly else default
    return configured
