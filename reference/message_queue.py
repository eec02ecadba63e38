"""`MessageQueue` and the Java string semantics the allocation strategies depend on.

RocketMQ orders queues and client ids with Java's `String.compareTo`, which compares UTF-16
code units. Python compares code points. The two orders agree inside the BMP but differ as
soon as a character outside it (stored by Java as a surrogate pair, 0xD800-0xDFFF) meets a
BMP character above U+DFFF (e.g. U+E000-U+FFFF): Java puts the supplementary character
first, Python last. Every ordering here therefore goes through `java_sort_key`.

Facts (digest section 1, `common/.../message/MessageQueue.java`):
- `compareTo`: topic, then brokerName (both Java String order), then `queueId - o.queueId`.
- `equals`/`hashCode`: all three fields.
- `toString()`: ``MessageQueue [topic=T, brokerName=B, queueId=N]``; the consistent-hash
  strategy hashes this text.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def java_string(s: str) -> str:
    """The canonical Python form of the Java string holding the same UTF-16 code units.

    A Python str may spell a supplementary character either as one code point or as two
    surrogate code points; Java cannot tell these apart, so neither may we. Valid surrogate
    pairs are joined; lone surrogates are kept (Java strings may hold them too).
    """
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
    return s


def java_sort_key(s: str) -> bytes:
    """A key whose natural (bytes) order is Java's `String.compareTo` order.

    Big-endian UTF-16 makes byte-wise comparison equal to code-unit comparison, and a proper
    prefix sorts first in both.
    """
    return s.encode("utf-16-be", "surrogatepass")


def _code_units(s: str) -> array:
    units = array("H")
    units.frombytes(s.encode("utf-16-le", "surrogatepass"))
    return units


def java_compare(a: str, b: str) -> int:
    """The exact value of Java's ``a.compareTo(b)``: the difference of the first differing
    UTF-16 code units, else the difference of the lengths in code units."""
    ua, ub = _code_units(a), _code_units(b)
    for x, y in zip(ua, ub):
        if x != y:
            return x - y
    return len(ua) - len(ub)


def java_utf8(s: str) -> bytes:
    """Bytes of Java's ``s.getBytes(UTF_8)``: a lone surrogate becomes ``?``, as Java's
    encoder substitutes its replacement byte for malformed input."""
    return java_string(s).encode("utf-8", "replace")


def _wrap_int32(v: int) -> int:
    return (v - INT32_MIN) % 2**32 + INT32_MIN


@dataclass(frozen=True, slots=True)
class MessageQueue:
    """An immutable queue address. Equality and hashing use all three fields; ordering is
    RocketMQ's `compareTo` (see the module docstring)."""

    topic: str
    broker_name: str
    queue_id: int

    def __post_init__(self):
        for name in ("topic", "broker_name"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"MessageQueue.{name} must be str, got {type(value).__name__}")
            object.__setattr__(self, name, java_string(value))
        qid = self.queue_id
        if isinstance(qid, bool) or not isinstance(qid, int):
            raise TypeError(f"MessageQueue.queue_id must be int, got {type(qid).__name__}")
        if not INT32_MIN <= qid <= INT32_MAX:
            raise ValueError(f"MessageQueue.queue_id {qid} is outside the Java int range")

    # ---- ordering ---------------------------------------------------------------------
    def sort_key(self) -> tuple[bytes, bytes, int]:
        return java_sort_key(self.topic), java_sort_key(self.broker_name), self.queue_id

    def compare_to(self, other: MessageQueue) -> int:
        """The exact int Java's `compareTo` returns, including the int overflow of
        ``queueId - o.queueId`` when the ids are more than 2**31-1 apart (possible only with
        negative ids). In that corner Java's comparator is not a total order; `sort_key`
        and the rich comparisons use the numeric order, which agrees with Java everywhere
        else."""
        return (java_compare(self.topic, other.topic)
                or java_compare(self.broker_name, other.broker_name)
                or _wrap_int32(self.queue_id - other.queue_id))

    def __lt__(self, other: MessageQueue) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    def __le__(self, other: MessageQueue) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.sort_key() <= other.sort_key()

    def __gt__(self, other: MessageQueue) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.sort_key() > other.sort_key()

    def __ge__(self, other: MessageQueue) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.sort_key() >= other.sort_key()

    # ---- text forms -------------------------------------------------------------------
    def java_str(self) -> str:
        """Java's `toString()`, the consistent-hash key."""
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def to_list(self) -> list:
        """The ``[topic, brokerName, queueId]`` triple used in JSON."""
        return [self.topic, self.broker_name, self.queue_id]

    @classmethod
    def from_list(cls, triple) -> MessageQueue:
        topic, broker_name, queue_id = triple
        return cls(topic, broker_name, queue_id)


def sort_mqs(mqs: Iterable[MessageQueue]) -> list[MessageQueue]:
    """A new list sorted by `MessageQueue.compareTo` (as `Collections.sort`, stable)."""
    return sorted(mqs, key=MessageQueue.sort_key)


def sort_cids(cids: Iterable[str]) -> list[str]:
    """A new list sorted by Java String natural order (UTF-16 code units), stable."""
    return sorted(cids, key=java_sort_key)
