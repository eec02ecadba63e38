"""What a verdict says beside holds or violated: what it did not judge (liveness, on a trace
without a judged end), and the profile a known bug's scenario needs when it was judged under
another. Shared by check, demo and gate, so that each says it in the same words."""
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


def verdict_word(rep) -> str:
    return ("HOLDS" if rep.ok else "VIOLATED") + scope_clause(rep)


def bug_profiles(scenario: str | None) -> dict[str, str]:
    """The profiles whose known bug the built-in scenario `scenario` is made to show: profile
    name -> the bug ("#2449"); from the profile registry and the scenario registry."""
    if not scenario:
        return {}
    from rocketspec.reference.scenario import bug_scenario
    from rocketspec.spec.profiles import PROFILES

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
