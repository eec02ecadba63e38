"""The application's message listener, as a scenario describes it.

A listener decides, per batch, the status it returns and how long the call takes. Rules
match messages by tag or key and override the defaults (a poison message that always fails,
a slow one); otherwise the outcome is the simulator's chooser's (reference.choice).
"""
from __future__ import annotations

from .. import checks

CONCURRENT_STATUSES = ("CONSUME_SUCCESS", "RECONSUME_LATER", "NULL", "EXCEPTION")
ORDERLY_STATUSES = ("SUCCESS", "SUSPEND_CURRENT_QUEUE_A_MOMENT", "COMMIT", "ROLLBACK", "NULL", "EXCEPTION")


def _rule_checks(orderly: bool) -> dict:
    statuses = ORDERLY_STATUSES if orderly else CONCURRENT_STATUSES
    return {"tags": checks.list_of(checks.string), "keys": checks.list_of(checks.string),
            "until_reconsume_times": checks.integer(0), "status": checks.one_of(*statuses),
            "duration_ms": checks.duration_range}


def listener_checks(orderly: bool) -> dict:
    statuses = ORDERLY_STATUSES if orderly else CONCURRENT_STATUSES
    rate = checks.number(0, 1)
    rule = _rule_checks(orderly)

    def rules(path, v):
        checks.list_of(lambda p, r: checks.check_table(r, rule, p))(path, v)

    return {"duration_ms": checks.duration_range, "fail_rate": rate, "null_rate": rate, "exception_rate": rate,
            "fail_status": checks.one_of(*statuses), "success_status": checks.one_of(*statuses),
            "ack_index": checks.integer(-1), "auto_commit": checks.boolean,
            "suspend_ms": checks.integer(-1, checks.MAX_RUN_MS), "delay_level_when_next_consume": checks.integer(-1),
            "rules": rules}


def check_listener(spec: dict | None, orderly: bool, path: str = "listener") -> None:
    if spec is None:
        return
    checks.check_table(spec, listener_checks(orderly), path)
    total = sum(spec.get(k, 0.0) for k in ("fail_rate", "null_rate", "exception_rate"))
    if total > 1:
        raise checks.FieldError(path, f"fail_rate + null_rate + exception_rate = {total} exceeds 1")


class ListenerSpec:
    def __init__(self, spec: dict | None, orderly: bool):
        check_listener(spec, orderly)
        spec = spec or {}
        self.orderly = orderly
        d = spec.get("duration_ms", [1, 10])
        self.duration = (d, d) if isinstance(d, int) else (int(d[0]), int(d[1]))
        self.fail_rate = float(spec.get("fail_rate", 0.0))
        self.null_rate = float(spec.get("null_rate", 0.0))
        self.exception_rate = float(spec.get("exception_rate", 0.0))
        self.fail_status = spec.get("fail_status", "SUSPEND_CURRENT_QUEUE_A_MOMENT" if orderly else "RECONSUME_LATER")
        self.success_status = spec.get("success_status", "SUCCESS" if orderly else "CONSUME_SUCCESS")
        self.ack_index = spec.get("ack_index")
        self.auto_commit = bool(spec.get("auto_commit", True))
        self.suspend_ms = spec.get("suspend_ms")
        self.delay_level_when_next_consume = int(spec.get("delay_level_when_next_consume", 0))
        self.rules = list(spec.get("rules", []))

    def min_duration(self) -> int:
        """The shortest call the listener may make, in ms (its rules' durations included)."""
        lows = [self.duration[0]]
        for rule in self.rules:
            d = rule.get("duration_ms")
            if d is not None:
                lows.append(d if isinstance(d, int) else int(d[0]))
        return min(lows)

    def _rule_for(self, msgs):
        for rule in self.rules:
            tags = rule.get("tags")
            keys = rule.get("keys")
            until = rule.get("until_reconsume_times")
            for m in msgs:
                if tags is not None and m.tags not in tags:
                    continue
                if keys is not None and m.keys not in keys:
                    continue
                if until is not None and m.reconsume_times >= until:
                    continue
                return rule
        return None

    def decide(self, sim, msgs) -> tuple[str, int]:
        """(status, duration_ms); status NULL / EXCEPTION stand for a null return or a throw."""
        rule = self._rule_for(msgs)
        lo, hi = self.duration
        if rule is not None and "duration_ms" in rule:
            d = rule["duration_ms"]
            lo, hi = (d, d) if isinstance(d, int) else (int(d[0]), int(d[1]))
        ch = sim.chooser
        duration = ch.integer("consume_duration", lo, hi)
        if rule is not None and "status" in rule:
            return rule["status"], duration
        status = ch.weighted("listener_status", ("EXCEPTION", "NULL", self.fail_status, self.success_status),
                             (self.exception_rate, self.null_rate, self.fail_rate))
        return status, duration
