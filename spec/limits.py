"""Timing and limits the spec judges by: each component's recorded configuration, with the
profile supplying only the defaults.

A real broker may run with `messageDelayLevel = "1s 1s ..."` or a 6 s broker lock, and a real
client with a 10 s lease; the trace carries that configuration with the component
(`broker_started.config`, `client_started.config`, schema v2, docs/trace-conventions.md).
The keys and how they are read are RocketMQ's (`rocketspec.rocketmq.config`); every timing
constant or limit the actions use is looked up here, per broker or per client, on the spec's
state: one lookup, so no action reads a profile constant for these directly.
"""
from __future__ import annotations

from rocketspec.rocketmq import retry
from rocketspec.rocketmq.config import (BROKER_KEYS, CLIENT_KEYS, BadConfig, BrokerLimits,  # noqa: F401
                                        ClientLimits, delay_table, resolve_max_reconsume)


def broker(st, name) -> BrokerLimits:
    """The limits of broker `name`: its broker_started.config, else the profile's defaults."""
    lim = st.dir.broker_limits.get(name)
    if lim is None:
        lim = st.dir.broker_limits[name] = BrokerLimits(st.profile, None)
    return lim


def client(st, cid) -> ClientLimits:
    """The limits of client `cid`: its client_started.config, else the profile's defaults."""
    c = st.dir.clients.get(cid)
    if c is not None and c.limits is not None:
        return c.limits
    d = st.dir
    if d.client_default is None:
        d.client_default = ClientLimits(st.profile, None)
    return d.client_default


def lease_margin(st, broker_name, cid) -> int:
    """A-LEASE-MARGIN (`rocketmq.retry.lease_margin`) between broker `broker_name`'s lock and
    client `cid`'s lease, as each was configured."""
    return retry.lease_margin(broker(st, broker_name).lock_max_live_ms, client(st, cid).lease_ms)


def max_reconsume(st, c) -> int | None:
    """Resolved maxReconsumeTimes of a client (`resolve_max_reconsume`)."""
    if c is None:
        return st.profile.default_max_reconsume_times
    return resolve_max_reconsume(c.max_reconsume, c.orderly, st.profile.default_max_reconsume_times)

