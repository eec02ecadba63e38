"""The proxy's receipt handles of one gRPC PushConsumer (5.5.0 DefaultReceiptHandleManager).

After the proxy writes a receive's messages to a client that asked for auto-renew, it keeps each
message's handle. Every 5 s it renews the handles whose deadline is within 10 s: a change of
invisible time by RenewStrategyPolicy (1 min, then 3, 5, 10, 30 min, then 1 h), and the new handle
replaces the old. A handle handed out 3 h ago is no longer renewed but nacked with the group's
retry delay. When the client's ack, nack or dead-letter request comes, the proxy takes the handle
out and sends the latest one. When the client is no longer registered with the group, its handles
are changed to come back in 1 s and forgotten.

The proxy runs in the broker's JVM (local mode): a handle is forgotten when its broker restarts.
The renewals run on the proxy's own scheduler, so a frozen or dead client's handles are renewed
until the client is found offline.
"""
from __future__ import annotations

from rocketspec.rocketmq.grpc_push import (INVISIBLE_WHEN_CLEAR_MS, RENEW_SCHEDULE_PERIOD_MS, renew_due,
                                           renew_expired, renew_invisible_ms, retry_policy_delay_ms)
from rocketspec.rocketmq.pop import deadline, parse_handle

from ..sim import Process


class _Kept:
    __slots__ = ("topic", "handle", "consume_ts", "renew_times", "reconsume_times", "incarnation")

    def __init__(self, topic, handle, consume_ts, reconsume_times, incarnation):
        self.topic, self.handle, self.consume_ts = topic, handle, consume_ts
        self.renew_times, self.reconsume_times, self.incarnation = 0, reconsume_times, incarnation


class ReceiptHandleManager:
    def __init__(self, sim, net, consumer):
        self.sim, self.net, self.consumer = sim, net, consumer
        self.client_id, self.group = consumer.client_id, consumer.group
        self.kept: dict[str, _Kept] = {}        # msg id -> the latest handle the proxy holds for it
        self.proc = Process(f"proxy:{self.client_id}")
        self.started = False

    def start(self) -> None:
        if not self.started:
            self.started = True
            self.sim.every(RENEW_SCHEDULE_PERIOD_MS, RENEW_SCHEDULE_PERIOD_MS, self.scan, owner=self.proc)

    def add(self, msg_id: str, topic: str, handle: str, reconsume_times: int) -> None:
        b = self.net.brokers.get(parse_handle(handle)["broker"])
        self.kept[msg_id] = _Kept(topic, handle, self.sim.now, reconsume_times,
                                  b.proc.incarnation if b is not None else 0)

    def take(self, msg_id: str, handle: str) -> str:
        """removeReceiptHandle: the handle to send for the client's request (the latest renewal
        of the one the client holds, or the client's own)."""
        k = self.kept.get(msg_id)
        if k is None or not self._alive(k):
            self.kept.pop(msg_id, None)
            return handle
        del self.kept[msg_id]
        return k.handle

    def _alive(self, k: _Kept) -> bool:
        b = self.net.brokers.get(parse_handle(k.handle)["broker"])
        return b is not None and b.up and b.proc.incarnation == k.incarnation

    def _offline(self) -> bool:
        """clientIsOffline: the client's channel is gone (a restarted client is another channel),
        or no broker has it registered in its group."""
        return self.net.clients.get(self.client_id) is not self.consumer or not any(
            b.up and self.client_id in b.consumers.get(self.group, {}) for b in self.net.brokers.values())

    def scan(self) -> None:
        """scheduleRenewTask."""
        if not self.kept:
            return
        if self._offline():
            for mid in sorted(self.kept):
                self._change(self.kept.pop(mid), INVISIBLE_WHEN_CLEAR_MS)
            return
        now = self.sim.now
        for mid in sorted(self.kept):
            k = self.kept[mid]
            if not self._alive(k):
                del self.kept[mid]
                continue
            h = parse_handle(k.handle)
            if not renew_due(deadline(h["pop_time"], h["invisible_time"]), now):
                continue
            if renew_expired(k.consume_ts, now):
                del self.kept[mid]
                self._change(k, retry_policy_delay_ms(k.reconsume_times))
                continue
            new = self._change(k, renew_invisible_ms(k.renew_times))
            if new is None:
                del self.kept[mid]
            else:
                k.handle = new
                k.renew_times += 1

    def _change(self, k: _Kept, invisible_ms: int):
        b = self.net.brokers.get(parse_handle(k.handle)["broker"])
        if b is None or not b.up:
            return None
        return b.pop.change_invisible_time(self.group, k.topic, k.handle, invisible_ms, self.client_id)

    def forget(self) -> None:
        self.kept.clear()
