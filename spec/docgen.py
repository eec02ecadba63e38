"""Generated parts of spec/SPEC.md: lifecycle diagrams, the invariant catalogue, the action
table, the known-bug profiles, the assumptions and the user guarantees, all from the code.

    python -m rocketspec.spec.docgen            # rewrite SPEC.md's generated sections
    python -m rocketspec.spec.docgen --check    # exit 1 if SPEC.md is out of date

A generated section sits between `<!-- BEGIN GENERATED: name -->` and
`<!-- END GENERATED: name -->`; everything else in SPEC.md is prose and is left alone.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

SPEC_MD = Path(__file__).with_name("SPEC.md")
_BLOCK = re.compile(r"(<!-- BEGIN GENERATED: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- END GENERATED: (?P=name) -->)",
                    re.S)


def lifecycles() -> str:
    from .lifecycles import LIFECYCLES, mermaid

    out = []
    for name, cls in LIFECYCLES.items():
        out.append(f"#### {name} (`{cls.__name__}`)\n")
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        out.append(doc + "\n")
        out.append("```mermaid")
        out.append(mermaid(cls).rstrip())
        out.append("```\n")
    return "\n".join(out)


def invariants() -> str:
    from .invariants import CATALOGUE

    out = ["| id | title | severity | form | key |", "|---|---|---|---|---|"]
    for inv in CATALOGUE:
        sev = inv.severity + (" (allowed anomaly)" if inv.allowed_anomaly else "")
        out.append(f"| `{inv.id}` | {inv.title} | {sev} | {inv.form} | {inv.key} |")
    out.append("")
    for inv in CATALOGUE:
        out.append(f"#### `{inv.id}`: {inv.title}\n")
        out.append(f"- **Statement.** {inv.statement}")
        if inv.mechanism:
            out.append(f"- **Why it holds.** {inv.mechanism}")
        if inv.assumptions:
            out.append(f"- **Assumptions.** {inv.assumptions}")
        if inv.breaks:
            out.append(f"- **What breaks it.** {inv.breaks}")
        out.append(f"- **Severity.** {inv.severity}{'; an allowed anomaly, counted' if inv.allowed_anomaly else ''}."
                   f" Checked as a {inv.form} property on the {inv.key} key.")
        out.append("")
    return "\n".join(out)


def actions() -> str:
    from .actions import HANDLERS, MECHANISMS

    out = ["| event kind (action) | RocketMQ mechanism |", "|---|---|"]
    for kind in HANDLERS:
        out.append(f"| `{kind}` | {MECHANISMS.get(kind, '')} |")
    return "\n".join(out) + "\n"


def known_bugs() -> str:
    from rocketspec.rocketmq.profiles import PROFILES

    out = ["| profile | upstream issue | must trip | what happens |", "|---|---|---|---|"]
    for p in PROFILES.values():
        if p.known_bug:
            out.append(f"| `{p.name}` | {p.known_bug} | `{p.expected_violation}` | {p.description} |")
    return "\n".join(out) + "\n"


def assumptions() -> str:
    from .assumptions import CATALOGUE
    from .invariants import CATALOGUE as INVARIANTS

    out = ["| id | assumed | invariants that rest on it |", "|---|---|---|"]
    for a in CATALOGUE:
        invs = ", ".join(f"`{i.id}`" for i in INVARIANTS if a.id in i.assumes)
        out.append(f"| `{a.id}` | {a.statement} | {invs} |")
    out.append("")
    for a in CATALOGUE:
        out.append(f"#### `{a.id}`\n")
        out.append(f"- **Assumed.** {a.statement[0].upper()}{a.statement[1:]}.")
        out.append(f"- **Why RocketMQ needs it.** {a.why}")
        out.append(f"- **Without it.** {a.without}")
        out.append(f"- **Source.** {a.source}")
        out.append("")
    return "\n".join(out)


def guarantees() -> str:
    from .history.guarantees import GUARANTEES
    from .invariants import CATALOGUE as INVARIANTS
    from .user_guarantees import CATALOGUE

    out = ["| id | guarantee | invariants that protect it | history guarantees that check it |", "|---|---|---|---|"]
    for g in CATALOGUE:
        invs = ", ".join(f"`{i.id}`" for i in INVARIANTS if g.id in i.protects)
        hs = ", ".join(f"`{h.id}`" for h in GUARANTEES if h.user_guarantee == g.id)
        out.append(f"| `{g.id}` | {g.statement} | {invs} | {hs} |")
    return "\n".join(out) + "\n"


GENERATORS = {"lifecycles": lifecycles, "invariants": invariants, "actions": actions, "known-bugs": known_bugs,
              "assumptions": assumptions, "guarantees": guarantees}


def render(text: str) -> str:
    def sub(m):
        gen = GENERATORS.get(m.group("name"))
        if gen is None:
            return m.group(0)
        body = gen().rstrip() + "\n"
        return m.group(1) + body + m.group(4)

    return _BLOCK.sub(sub, text)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = SPEC_MD.read_text()
    new = render(text)
    if "--check" in argv:
        if new != text:
            print(f"{SPEC_MD} is out of date: run python -m rocketspec.spec.docgen", file=sys.stderr)
            return 1
        return 0
    if new != text:
        SPEC_MD.write_text(new)
        print(f"rewrote generated sections of {SPEC_MD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
