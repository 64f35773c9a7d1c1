"""The ``newsquarry`` click group and ``main()``, its entry point: the group's options, the
commands of ``commands/`` added to it, and the ``--index`` each takes after its name.
"""

from __future__ import annotations

import sys

import click

from newsquarry.search.cli.commands.follow import follow
from newsquarry.search.cli.commands.maintenance import aliases, check, embed, repair
from newsquarry.search.cli.commands.read import cooccur, facets, quotes, search, show, stats
from newsquarry.search.cli.commands.serving import completion, daemon, key, serve
from newsquarry.search.cli.commands.write import delete, index, optimize_command
from newsquarry.search.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    URL_COMMANDS,
    Context,
    Terminated,
    index_after_command,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--index",
    envvar="NEWSQUARRY_INDEX",
    type=click.Path(file_okay=False),
    help="Index folder [env: NEWSQUARRY_INDEX; default: ~/.local/share/newsquarry/index].",
)
@click.option(
    "--url",
    envvar="NEWSQUARRY_URL",
    help="Ask a running newsquarry API (search, quotes, facets, show, stats) [env: NEWSQUARRY_URL].",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.version_option(package_name="newsquarry")
@click.pass_context
def cli(ctx: click.Context, index: str | None, url: str | None, debug: bool) -> None:
    """newsquarry: search news at the level of the passage, and find who said what.

    \b
    Examples:
      newsquarry search torture
      newsquarry search 'Guaido AND army' --facet person
      newsquarry quotes torture --speaker "Raúl Daniel Alvarenga"
      newsquarry index ~/news/ && newsquarry stats

    --index and --url may also follow the command:
    newsquarry search x --index DIR
    """
    ctx.obj = Context(index, debug, url)
    given = ctx.get_parameter_source("url") == click.core.ParameterSource.COMMANDLINE
    if given and ctx.invoked_subcommand not in URL_COMMANDS:
        raise click.UsageError(f"--url: `{ctx.invoked_subcommand}` works on a local index only")


for _command in (index, follow, search, quotes, cooccur, facets, show, stats, delete, aliases,
                 serve, key, daemon, completion, optimize_command, check, repair,
                 embed):  # fmt: skip
    cli.add_command(_command)

# every command that uses an index also takes --index after its name (one definition)
for _name in ("index", "follow", "search", "quotes", "facets", "cooccur", "show", "stats",
              "delete", "serve", "optimize", "check", "repair", "embed"):  # fmt: skip
    cli.commands[_name].params.append(index_after_command())


def main() -> None:
    """Console-script entry point (through ``search.cli.launch``).

    Not click's standalone mode only for Ctrl-C: click turns it into "Aborted!" and exit
    code 1, where the documented code is 130 (as a shell reports a command it
    interrupted); usage errors and ``--help`` behave as click makes them.
    """
    try:
        code = cli.main(prog_name="newsquarry", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        # SIGTERM where a command stops on it (``index``) before its own handling begins
        if isinstance(exc, Terminated) or isinstance(exc.__cause__, Terminated):
            click.echo("Terminated.", err=True)
            sys.exit(EXIT_TERMINATED)
        click.echo("Interrupted.", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)  # an int only from click's Exit (--help)


if __name__ == "__main__":
    main()
