"""The broker's delay levels: `messageDelayLevel` and how ScheduleMessageService reads it.

`ScheduleMessageService.parseDelayLevel` splits the string on blanks; each token is
`<number><unit>` with unit s, m, h or d, and token N is the delay of level N. A retry's
level picks its wait from this table (digest section 7).
"""
from __future__ import annotations

# MessageStoreConfig.messageDelayLevel's default: 18 levels, 1 s to 2 h.
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

UNIT_MS = {"s": 1000, "m": 60000, "h": 3600000, "d": 86400000}


class DelayLevelError(ValueError):
    """A `messageDelayLevel` string that is not a table of levels. `index` is the 1-based
    position of the bad `token`; `empty` is true when the string has no token at all.
    Each caller words its own message from these; str() is the reference's wording."""

    def __init__(self, index: int = 0, token: str | None = None):
        self.index, self.token, self.empty = index, token, token is None
        super().__init__("messageDelayLevel is empty" if token is None
                         else f"delay level {index}: {token!r} is not <number><s|m|h|d>")


def parse_delay_levels(text: str) -> list[int]:
    """'1s 5s ... 2h' -> [1000, 5000, ...]: the delay in ms of level 1, level 2, ..."""
    out = []
    for i, word in enumerate(text.split()):
        unit = UNIT_MS.get(word[-1:])
        # isdecimal, not isdigit: '²' is a digit int() cannot read, and Java's parseLong refuses it
        if unit is None or not word[:-1].isdecimal():
            raise DelayLevelError(i + 1, word)
        out.append(int(word[:-1]) * unit)
    if not out:
        raise DelayLevelError()
    return out
