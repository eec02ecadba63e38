"""What a verdict says, in words, for whoever prints a report of `check`: the verdict word and what
it did not judge (liveness, on a trace without a judged end), the profile a known bug's scenario
needs when it was judged under another, the text report (errors, counts with examples, next
steps) and the --require-end rule. Shared by the check, demo and replay commands, the gate and
the pytest plugin, so that each says it in the same words."""
from __future__ import annotations


def liveness_ids() -> list[str]:
    """The invariants judged only at the end of a trace (form "end")."""
    from rocketspec.spec.invariants import CATALOGUE

    return [i.id for i in CATALOGUE if i.form == "end"]


def scope_clause(rep) -> str:
    """" (safety only: ...)" after the verdict word when the end-of-trace invariants were not
    judged, else ""."""
    why = rep.liveness_not_judged
    if not why:
        return ""
    return f" (safety only: {why}, so liveness ({', '.join(liveness_ids())}) was not judged)"


def level_clause(rep) -> str:
    """" (observed ...: N of M rules judged)" when the trace's observation level leaves rules
    unjudged (spec/observation.py), else ""."""
    lv = getattr(rep, "level", None)
    if lv is None or lv.whole:
        return ""
    d = lv.to_dict()
    return (f" (observed {', '.join(d['observed'])}: {len(d['rules_judged'])} of "
            f"{len(d['rules_judged']) + len(d['rules_not_judged'])} rules judged)")


def verdict_word(rep) -> str:
    word = "HOLDS" if rep.ok else "VIOLATED"
    if rep.ok and getattr(rep, "nothing_judged", False):
        word = "INCOMPLETE"
    return word + scope_clause(rep) + level_clause(rep)


def level_lines(rep) -> list[str]:
    """The rules the trace's observation level judged, and each it could not with the side it lacks."""
    lv = getattr(rep, "level", None)
    if lv is None or lv.whole:
        return []
    d = lv.to_dict()
    out = ["", f"  observation level: {', '.join(d['observed'])} (as the trace declares it)",
           f"  rules judged ({len(d['rules_judged'])}): {', '.join(d['rules_judged']) or 'none'}",
           f"  rules not judged ({len(d['rules_not_judged'])}):"]
    for r in d["rules_not_judged"]:
        out.append(f"    {r['rule']}: {r['why']}")
    return out


def bug_profiles(scenario: str | None) -> dict[str, str]:
    """The profiles whose known bug the built-in scenario `scenario` is made to show: profile
    name -> the bug ("#2449"); from the profile registry and the scenario registry."""
    if not scenario:
        return {}
    from rocketspec.reference.scenario import bug_scenario
    from rocketspec.rocketmq.profiles import PROFILES

    return {p.name: p.known_bug for p in PROFILES.values() if p.known_bug and bug_scenario(p.known_bug) == scenario}


def bug_profile_hint(rep) -> str | None:
    """One line when a known bug's scenario was judged under a profile that is not the bug's
    (it then usually holds, and says nothing of the bug), else None."""
    st = getattr(rep.findings, "st", None)
    d = getattr(st, "dir", None)
    scenario = getattr(d, "scenario", None)
    bugs = bug_profiles(scenario)
    if not bugs or rep.profile in bugs:
        return None
    made = getattr(d, "profile_name", None)
    if made in bugs:
        return (f"note: this trace of scenario {scenario} was made under {made}, the profile of known bug "
                f"{bugs[made]}, but judged under {rep.profile}: check it with --profile {made}")
    name, bug = sorted(bugs.items())[0]
    return (f"note: scenario {scenario} is made to show known bug {bug}, under profile {name}; this trace was "
            f"judged under {rep.profile}: to see the bug, "
            f"rocketspec simulate --scenario {scenario} --profile {name} --out t.jsonl, then check that trace")


def _fmt_state(state, indent="      ") -> str:
    from rocketspec import jsonout

    if not state:
        return f"{indent}(no state for this key yet)"
    text = jsonout.dumps(state, indent=True, non_str_keys=True)
    lines = text.splitlines()
    if len(lines) > 40:
        lines = lines[:40] + ["..."]
    return "\n".join(indent + ln for ln in lines)


def render_text(rep, verbose: bool = False) -> str:
    """The report, verdict first: the verdict (and what it did not judge), a note when a known
    bug's scenario was judged under another profile, then each error with its cause and place,
    the counts and the next steps. `verbose` adds each error's last accepted state of its key
    (a JSON dump, up to 40 lines each)."""
    d = rep.to_dict()
    at = d["position"]      # "line" of a JSON Lines file, "row" of a Parquet one
    # the verdict word says how a trace ended when that kept liveness from being judged
    ended = "" if rep.liveness_not_judged else f", ended {d['ended']}"
    out = [f"{d['path']}: {verdict_word(rep)} under profile {d['profile']} ({d['events']} events{ended})"]
    hint = bug_profile_hint(rep)
    if hint:
        out.append(f"  {hint}")
    out.extend(level_lines(rep))
    for part in d.get("parts_not_judged", ()):
        out.append(f"  not judged: {part['rule']}'s part '{part['part']}' for {', '.join(part['clients'])}: "
                   f"{part['why']}")
    for v in d["violations"]:
        key = v["key"]
        keys = ", ".join(f"{k}={val}" for k, val in key.items()) if key else "-"
        out.append("")
        out.append(f"  {v['invariant']} {v['title']}")
        out.append(f"    {v['message']}")
        if v.get("guarantee"):
            out.append(f"    guarantee lost: {v['guarantee']}")
        out.append(f"    event: seq {v['seq']}, {at} {v['line']}, kind {v['event_kind']}"
                   f"{' (' + v['action'] + ')' if v['action'] else ''}")
        out.append(f"    key: {keys}")
        if verbose:
            out.append("    last accepted state of the key:")
            out.append(_fmt_state(v["last_state"]))
    hidden = d["errors"] - len(d["violations"])
    if hidden > 0:
        out.append(f"\n  ... and {hidden} more errors")
    out.extend(_counts_with_examples(d))
    if not rep.ok:
        p = _shell_word(d["path"])
        out.append("")
        out.append("  next steps:")
        if not verbose:
            out.append(f"    rocketspec check {p} --verbose   # also the last accepted state of each key")
        out.append(f"    rocketspec minimize {p} -o min.jsonl   # the shortest trace that still fails this way")
        out.append(f"    rocketspec explain {p} --html why.html  # the story and timeline of the violated queue")
    return "\n".join(out)


def _counts_with_examples(d) -> list:
    """Every counted finding with its invariant's title and an example (the first of each; the
    errors listed above are their own examples)."""
    from rocketspec.spec import invariants as inv

    counts = d["counts"]
    at = d["position"]
    if not counts:
        return []
    examples: dict = {}
    for w in d["warnings"]:
        examples.setdefault(w["invariant"], []).append(w)
    listed = {v["invariant"] for v in d["violations"]}
    out = ["", "  counts:"]
    for k, n in counts.items():
        cat = inv.BY_ID.get(k)
        title = cat.title if cat else "guard of the action"
        out.append(f"    {k} {n}: {title}")
        exs = examples.get(k, [])
        for w in exs[:2]:
            key = ", ".join(f"{a}={b}" for a, b in (w["key"] or {}).items()) or "-"
            out.append(f"      e.g. seq {w['seq']} ({at} {w['line']}, {w['event_kind']}; {key}): {w['message']}")
        if not exs and k in listed:
            out.append("      (examples listed above)")
        elif not exs:
            out.append("      (no example kept)")
    return out


def _shell_word(path: str) -> str:
    import shlex

    return shlex.quote(path) if path != "<stdin>" else "TRACE"


def require_end(rep):
    """--require-end: a trace with no trace_ended is bad input (for CI, where a trace cut short must
    not pass on its safety verdict alone)."""
    from rocketspec.errors import UserError

    if rep.ended is None:
        safety = "holds" if rep.ok else f"violated ({rep.findings.error_count} errors)"
        raise UserError(f"the trace has no trace_ended event ({rep.events} events read; on safety alone it "
                        f"{safety}); --require-end expects a complete trace whose last event is trace_ended",
                        file=rep.path)
    return rep
