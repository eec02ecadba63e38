"""The application's message listener, as a scenario describes it.

A listener decides, per batch, the status it returns and how long the call takes. Rules
match messages by tag or key and override the defaults (a poison message that always fails,
a slow one); otherwise the outcome is drawn from the simulator's one random source.
"""
from __future__ import annotations

CONCURRENT_STATUSES = ("CONSUME_SUCCESS", "RECONSUME_LATER", "NULL", "EXCEPTION")
ORDERLY_STATUSES = ("SUCCESS", "SUSPEND_CURRENT_QUEUE_A_MOMENT", "COMMIT", "ROLLBACK", "NULL", "EXCEPTION")


class ListenerSpec:
    def __init__(self, spec: dict | None, orderly: bool):
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
        duration = sim.uniform_int(lo, hi)
        if rule is not None and "status" in rule:
            return rule["status"], duration
        r = sim.rng.random()
        if r < self.exception_rate:
            return "EXCEPTION", duration
        r -= self.exception_rate
        if r < self.null_rate:
            return "NULL", duration
        r -= self.null_rate
        if r < self.fail_rate:
            return self.fail_status, duration
        return self.success_status, duration
