"""The broker's client connections and its idle close (NettyRemotingServer's pipeline).

Every connection of a client to the broker carries Netty's IdleStateHandler(0, 0,
serverChannelMaxIdleTimeSeconds): an all-idle check armed when the channel opens, due at the
last read or write plus the idle time, re-armed for the time left when there was I/O since.
So a channel closes exactly that long after its last I/O, with no period of its own. A read
is any request of the client (a heartbeat, a pull, a one-way offset update, a lock, a query); a
write is any answer or notification the broker sends on it (a held pull's answer, a
NOTIFY_CONSUMER_IDS_CHANGED), written into the socket even when the client is frozen.
NettyConnectManageHandler.userEventTriggered then closes the channel, and the housekeeping
service (onChannelIdle, onChannelClose) does what a closed channel does: the client leaves
every group (Broker.channel_closed). Its next request opens a new connection.
"""
from __future__ import annotations

from ..footprint import footprint
from ..sim import Timer


class ClientChannels:
    """One connection per client (an MQClientInstance has one channel per broker address)."""

    def __init__(self, broker, max_idle_ms: int):
        self.broker = broker
        self.max_idle_ms = max_idle_ms
        self.last_io: dict[str, int] = {}      # client -> time of its channel's last read or write
        self._checks: dict[str, Timer] = {}    # client -> its channel's pending idle check
        self.closed: set[str] = set()          # clients whose channel the broker closed (not reopened yet)

    def io(self, client: str) -> None:
        """A read or write on the client's channel, which opens one if it has none."""
        b = self.broker
        if client not in self.last_io:
            timer = self._checks[client] = Timer()
            b.sim.schedule(self.max_idle_ms, self._check, client, owner=b.proc, timer=timer)
            self.last_io[client] = b.sim.now
            if client in self.closed:
                self.closed.discard(client)
                if b.on_reconnect is not None:
                    b.on_reconnect(b, client)
            return
        self.last_io[client] = b.sim.now

    def is_open(self, client: str) -> bool:
        return client in self.last_io

    def _closes_now(self, client: str) -> bool:
        last = self.last_io.get(client)
        return last is not None and last + self.max_idle_ms <= self.broker.sim.now

    # A check that finds I/O since only arms the next one (the order against an I/O of the same
    # millisecond moves that check, not what it does); a close conflicts with everything.
    @footprint(lambda self, client: None if self._closes_now(client) else (
        {("channel", self.broker.name, client)}, {("channel", self.broker.name, client)}))
    def _check(self, client: str) -> None:
        """IdleStateHandler's AllIdleTimeoutTask."""
        b = self.broker
        if client not in self.last_io:
            return
        left = self.last_io[client] + self.max_idle_ms - b.sim.now
        if left > 0:
            timer = self._checks[client] = Timer()
            b.sim.schedule(left, self._check, client, owner=b.proc, timer=timer)
            return
        b.idle_closed(client)   # closes the channel (close)

    def close(self, client: str) -> None:
        """The broker closes the channel; the client's next request opens a new one."""
        if client in self.last_io:
            self.closed.add(client)
        self.forget(client)

    def forget(self, client: str) -> None:
        """The channel is closed (by either side): its idle check goes with it."""
        self.last_io.pop(client, None)
        timer = self._checks.pop(client, None)
        if timer is not None:
            timer.cancel()

    def clear(self) -> None:
        for client in list(self.last_io):
            self.forget(client)
        self.closed.clear()
