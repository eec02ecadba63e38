"""The proxy's receipt handles of gRPC PushConsumers (5.5.0 DefaultReceiptHandleManager).

After the proxy writes a receive's messages to a client that asked for auto-renew, it keeps each
message's handle, per client and group. Every 5 s it renews the handles whose deadline is within 10 s: a change of
invisible time by RenewStrategyPolicy (1 min, then 3, 5, 10, 30 min, then 1 h), and the new handle
replaces the old. A handle handed out 3 h ago is no longer renewed but nacked with the group's
retry delay. When the client's ack, nack or dead-letter request comes, the proxy takes the handle
out and sends the latest one. When the client is no longer registered with the group, its handles
are changed to come back in 1 s and forgotten.

The proxy runs in the broker's JVM (local mode): a handle is forgotten when its broker restarts.
One proxy serves the run (`proxy_of`), its scan every 5 s from the start; the renewals run on the
proxy's scheduler, so a frozen or dead client's handles are renewed until it is found offline.
"""
from __future__ import annotations

from rocketspec.rocketmq.grpc_push import (INVISIBLE_WHEN_CLEAR_MS, RENEW_SCHEDULE_PERIOD_MS, renew_due,
                                           renew_expired, renew_invisible_ms, retry_policy_delay_ms)
from rocketspec.rocketmq.pop import deadline, parse_handle

from ..footprint import footprint
from ..sim import Process


class _Kept:
    __slots__ = ("topic", "handle", "consume_ts", "renew_times", "reconsume_times", "incarnation")

    def __init__(self, topic, handle, consume_ts, reconsume_times, incarnation):
        self.topic, self.handle, self.consume_ts = topic, handle, consume_ts
        self.renew_times, self.reconsume_times, self.incarnation = 0, reconsume_times, incarnation


def proxy_of(sim, net) -> "ReceiptHandleManager":
    """The run's proxy (made, and its scan started, with the first client that needs it)."""
    proxy = net.proxy_handles
    if proxy is None:
        proxy = net.proxy_handles = ReceiptHandleManager(sim, net)
    return proxy


class ReceiptHandleManager:
    def __init__(self, sim, net):
        self.sim, self.net = sim, net
        # (client id, group) -> msg id -> the latest handle the proxy holds for it
        self.groups: dict[tuple, dict[str, _Kept]] = {}
        self.consumers: dict[tuple, object] = {}    # (client id, group) -> the client (its channel)
        self.proc = Process("proxy")
        # scheduleWithFixedDelay(scheduleRenewTask, 0, 5 s) from the proxy's start (the run's)
        first = -sim.now % RENEW_SCHEDULE_PERIOD_MS or RENEW_SCHEDULE_PERIOD_MS
        sim.every(first, RENEW_SCHEDULE_PERIOD_MS, self.scan, owner=self.proc)

    def add(self, consumer, msg_id: str, topic: str, handle: str, reconsume_times: int) -> None:
        key = (consumer.client_id, consumer.group)
        self.consumers[key] = consumer
        b = self.net.brokers.get(parse_handle(handle)["broker"])
        self.groups.setdefault(key, {})[msg_id] = _Kept(topic, handle, self.sim.now, reconsume_times,
                                                         b.proc.incarnation if b is not None else 0)

    def take(self, consumer, msg_id: str, handle: str) -> str:
        """removeReceiptHandle: the handle to send for the client's request (the latest renewal
        of the one the client holds, or the client's own)."""
        kept = self.groups.get((consumer.client_id, consumer.group), {})
        k = kept.pop(msg_id, None)
        if k is None or not self._alive(k):
            return handle
        return k.handle

    def _alive(self, k: _Kept) -> bool:
        b = self.net.brokers.get(parse_handle(k.handle)["broker"])
        return b is not None and b.up and b.proc.incarnation == k.incarnation

    def _offline(self, key) -> bool:
        """clientIsOffline: the client's channel is gone (a restarted client is another channel),
        or no broker has it registered in its group."""
        cid, group = key
        return self.net.clients.get(cid) is not self.consumers[key] or not any(
            b.up and cid in b.consumers.get(group, {}) for b in self.net.brokers.values())

    # holding no handle, the scan only reads that it holds none
    @footprint(lambda self: ({("proxy", "handles")}, set()) if not any(self.groups.values()) else None)
    def scan(self) -> None:
        """scheduleRenewTask."""
        now = self.sim.now
        for key in sorted(self.groups):
            kept = self.groups[key]
            if not kept:
                continue
            if self._offline(key):
                for mid in sorted(kept):
                    self._change(key, kept.pop(mid), INVISIBLE_WHEN_CLEAR_MS)
                continue
            for mid in sorted(kept):
                k = kept[mid]
                if not self._alive(k):
                    del kept[mid]
                    continue
                h = parse_handle(k.handle)
                if not renew_due(deadline(h["pop_time"], h["invisible_time"]), now):
                    continue
                if renew_expired(k.consume_ts, now):
                    del kept[mid]
                    self._change(key, k, retry_policy_delay_ms(k.reconsume_times))
                    continue
                new = self._change(key, k, renew_invisible_ms(k.renew_times))
                if new is None:
                    del kept[mid]
                else:
                    k.handle = new
                    k.renew_times += 1

    def _change(self, key, k: _Kept, invisible_ms: int):
        b = self.net.brokers.get(parse_handle(k.handle)["broker"])
        if b is None or not b.up:
            return None
        return b.pop.change_invisible_time(key[1], k.topic, k.handle, invisible_ms, key[0])
