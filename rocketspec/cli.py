"""The `rocketspec` command line.

Each subcommand lives in the module that owns its job and is imported only when used, so
`rocketspec allocate` does not pay for pyarrow or z3. Errors take one path for every command
(`RocketspecGroup.main`, rocketspec/errors.py, docs/cli-errors.md).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from rocketspec import stdio
from rocketspec.errors import EXIT_INTERRUPTED, debug_requested, report_exception

# name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("rocketspec.commands.demo", "demo", "Simulate the default scenario and check its trace."),
    "simulate": ("rocketspec.commands.simulate", "simulate", "Run a scenario on the reference and write its trace."),
    "record": ("rocketspec.commands.record", "record_cmd", "Run a scenario on real RocketMQ 4.9.8 and write the trace."),
    "scenarios": ("rocketspec.commands.simulate", "scenarios", "List the built-in scenarios."),
    "allocate": ("rocketspec.commands.allocate", "allocate", "Queue allocation as JSON Lines (stdin -> stdout)."),
    "filter": ("rocketspec.commands.filter", "filter_cmd", "Tag and SQL92 filter evaluation as JSON Lines."),
    "check": ("rocketspec.commands.check", "check", "Validate a trace against the spec."),
    "minimize": ("rocketspec.commands.minimize", "minimize_cmd", "Shrink a failing trace, keeping its violation."),
    "history": ("rocketspec.commands.history", "history", "Check the black-box guarantees on a produce/consume history."),
    "explain": ("rocketspec.commands.explain", "explain", "Explain a trace: its story and timeline (HTML, PNG)."),
    "replay": ("rocketspec.commands.replay", "replay_cmd", "Check traces on Spark, partitioned by key."),
    "diff": ("rocketspec.commands.diff", "diff", "Differential report: a reference trace against a real one."),
    "explore": ("rocketspec.commands.explore", "explore", "Exhaustive small-scope model checking."),
    "gate": ("rocketspec.commands.gate", "gate", "The conformance gate for CI (JUnit XML, markdown summary)."),
    "prove": ("rocketspec.commands.prove", "prove", "z3 proofs of allocation and lock-lease properties."),
    "profiles": ("rocketspec.commands.profiles", "profiles", "List version profiles and their switches."),
    "schema": ("rocketspec.commands.schema", "schema", "Print the trace schema (JSON, or Markdown)."),
}


def _flag_given(args: list[str], flag: str) -> bool:
    """`flag` among the options (before a `--` that ends them)."""
    for a in args:
        if a == "--":
            return False
        if a == flag:
            return True
    return False


def _command_name(args: list[str]) -> str | None:
    return next((a for a in args if a in COMMANDS), None)


class RocketspecGroup(click.Group):
    """Loads subcommands lazily, and gives every command the same error path: a user mistake
    (rocketspec.errors.UserError, a click usage error, a path that cannot be opened) exits 2 with
    one located line; anything else is a bug in rocketspec and exits 3; `--json` makes either a
    JSON object on standard output."""

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

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        args = sys.argv[1:] if args is None else list(args)
        as_json = _flag_given(args, "--json")
        debug = _flag_given(args, "--debug") or debug_requested()
        stdio.guard()
        trace_io = sys.modules.get("rocketspec.traces.io")
        if trace_io is not None:  # pipes read by an earlier invocation in this process (tests)
            trace_io._STREAMS_READ.clear()
        try:
            try:
                rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            finally:
                stdio.finish()  # here, not at interpreter exit, where a fault cannot be reported
        except SystemExit:
            raise
        except (click.exceptions.Abort, KeyboardInterrupt):
            sys.stderr.write("Aborted!\n")
            sys.exit(EXIT_INTERRUPTED)
        except click.UsageError as exc:
            if not as_json and type(exc).__name__ == "NoArgsIsHelpError":  # bare command: its help
                exc.show()
                sys.exit(exc.exit_code)
            sys.exit(report_exception(exc, command=_command_name(args), as_json=as_json, debug=debug))
        except (BrokenPipeError, stdio.ReaderGone):
            stdio.silence_stdout()
            sys.exit(1)
        except stdio.StreamError as exc:
            broken_out = exc.file == stdio.STDOUT
            if broken_out:
                stdio.silence_stdout()
            sys.exit(report_exception(exc, command=_command_name(args), as_json=as_json and not broken_out,
                                      debug=debug))
        except Exception as exc:  # noqa: BLE001 - the one place that decides what an error means
            sys.exit(report_exception(exc, command=_command_name(args), as_json=as_json, debug=debug))
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=RocketspecGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rocketspec")
@click.option("--debug", is_flag=True,
              help="On an internal error, print the traceback (also: ROCKETSPEC_DEBUG=1).")
def main(debug):
    """rocketspec: RocketMQ consumer semantics, executable and checkable.

    Exit codes: 0 holds, 1 a finding that fails, 2 bad input or configuration, 3 an internal
    error (a bug in rocketspec: please report it), 4 incomplete (a cap or budget ran out)."""
