"""The `rocketspec` command line.

Each subcommand lives in the module that owns its job and is imported only when used, so
`rocketspec allocate` does not pay for pyarrow or z3.
"""
from __future__ import annotations

import importlib

import click

# name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("rocketspec.commands.demo", "demo", "Simulate the default scenario and check its trace."),
    "simulate": ("rocketspec.commands.simulate", "simulate", "Run a scenario on the reference and write its trace."),
    "record": ("rocketspec.commands.record", "record_cmd", "Run a scenario on real RocketMQ 4.9.8 and write the trace."),
    "scenarios": ("rocketspec.commands.simulate", "scenarios", "List the built-in scenarios."),
    "allocate": ("rocketspec.commands.allocate", "allocate", "Queue allocation as JSON Lines (stdin -> stdout)."),
    "filter": ("rocketspec.commands.filter", "filter_cmd", "Tag and SQL92 filter evaluation as JSON Lines."),
    "check": ("rocketspec.commands.check", "check", "Validate a trace against the spec."),
    "explore": ("rocketspec.commands.explore", "explore", "Exhaustive small-scope model checking."),
    "prove": ("rocketspec.commands.prove", "prove", "z3 proofs of allocation and lock-lease properties."),
    "profiles": ("rocketspec.commands.profiles", "profiles", "List version profiles and their switches."),
    "schema": ("rocketspec.commands.schema", "schema", "Print the trace schema (JSON, or Markdown)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(n for n, (mod, _, _) in COMMANDS.items() if importlib.util.find_spec(mod) is not None)

    def get_command(self, ctx, name):
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        module, attr, _ = entry
        try:
            return getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                return None
            raise


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rocketspec")
def main():
    """rocketspec: RocketMQ consumer semantics, executable and checkable."""


import importlib.util  # noqa: E402  (used by LazyGroup.list_commands)
