"""`rocketspec schema`: the trace schema, as JSON or as the Markdown reference."""
from __future__ import annotations

import click


@click.command()
@click.option("--markdown", is_flag=True, help="Print the field and kind reference as Markdown.")
def schema(markdown):
    """Print the trace schema (version 2; reads versions 1 and 2)."""
    from importlib import resources

    from rocketspec.traces.schema import SCHEMA_FILE, markdown as md

    if markdown:
        click.echo(md(), nl=False)
    else:
        click.echo(resources.files("rocketspec.traces").joinpath(SCHEMA_FILE).read_text(), nl=False)
