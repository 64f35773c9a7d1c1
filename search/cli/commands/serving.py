"""The serving commands: ``serve`` (the HTTP API under gunicorn), ``key`` (scoped read
keys), ``daemon`` (the resident searcher's status, start, stop) and ``completion``.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from typing import Any

import click

from newsquarry.search.cli.common import Context, ensure_index, fail, handle_errors
from newsquarry.search.cli.output import plural, to_json


def port_free_or_fail(host: str, port: int) -> None:
    """Exit with a message when something already listens on ``host:port``.

    The server's workers bind with SO_REUSEPORT, which the kernel lets a second
    server of the same user share without an error; a plain bind (SO_REUSEADDR
    only, so connections of a stopped server in TIME_WAIT do not count) fails
    on any listening socket, shared or not.
    """
    import socket  # lazy: start-up time

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror}", 2)
        return
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                fail(f"port {port} on {host} is in use (another server?): choose --port", 2)
            else:
                fail(f"cannot listen on {host}:{port}: {exc.strerror}", 2)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=2,
    show_default=True,
    help="Worker processes (one per core suits this size).",
)
@click.option(
    "--threads", type=click.IntRange(1), default=4, show_default=True, help="Threads per worker."
)
@click.pass_obj
@handle_errors
def serve(obj: Context, host: str, port: int, workers: int, threads: int) -> None:
    """Serve the HTTP API, search page and widget under gunicorn.

    At the default index folder, indexes the bundled corpus first when the index is
    empty; at another folder (--index) it starts on a new, empty index, filled through the
    API. Settings come
    from NEWSQUARRY_* environment variables (see docs/api.md), e.g.
    NEWSQUARRY_WRITE_TOKEN enables the write endpoints.

    \b
    Examples:
      newsquarry serve
      newsquarry serve --port 9000 --workers 2 --threads 8
      NEWSQUARRY_WORKER_CLASS=sync newsquarry serve   # gunicorn's gthread, behind a buffering proxy
      curl 'http://127.0.0.1:8080/v1/search?q=torture'
    """
    if obj.settings.get("secret"):
        from newsquarry.search.query.keys import check_secret  # lazy: start-up time

        check_secret(str(obj.settings["secret"]))  # gunicorn would refuse it too, less clearly
    port_free_or_fail(host, port)
    ensure_index(obj, serving=True)
    env = dict(os.environ, NEWSQUARRY_INDEX=obj.index_dir)
    argv = [
        sys.executable, "-m", "gunicorn",
        "--config", "python:newsquarry.api.gunicorn_conf",
        "--bind", f"{host}:{port}",
        "--workers", str(workers),
        "--threads", str(threads),
        "newsquarry.api.wsgi:app",
    ]  # fmt: skip
    click.echo(f"Serving {obj.index_dir} on http://{host}:{port}/", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


@click.command()
@click.option("--speaker", multiple=True, help="Fix this speaker (repeat to allow several).")
@click.option("--person", multiple=True)
@click.option("--org", multiple=True)
@click.option("--place", multiple=True)
@click.option("--source", multiple=True, help="Fix this source.")
@click.option("--article", multiple=True)
@click.option("--since", help="Earliest date the key can see (YYYY[-MM[-DD]]).")
@click.option("--until", help="Latest date the key can see.")
@click.option(
    "--expires-in",
    default="30d",
    show_default=True,
    help="Lifetime: a number with s, m, h or d (e.g. 12h, 30d); 'never' for none.",
)
@click.option(
    "--secret",
    envvar="NEWSQUARRY_SECRET",
    help="The server's secret [env: NEWSQUARRY_SECRET, as the server reads it].",
)
@click.pass_obj
@handle_errors
def key(obj: Context, since: str | None, until: str | None, expires_in: str,
        secret: str | None, **kw: Any) -> None:  # fmt: skip
    """Make a scoped read key for an embedder: fixed filters and an expiry.

    Requests made with the key (header X-Newsquarry-Key or ?key=) can narrow
    its filters but never widen them. The key is signed with the server's
    secret: NEWSQUARRY_SECRET, read like the server reads it (or --secret).

    \b
    Examples:
      NEWSQUARRY_SECRET=... newsquarry key --source "News from the world" --expires-in 7d
      newsquarry key --speaker "Harry Solano" --expires-in never
    """
    from newsquarry.search.query.keys import Scope, check_secret, make_key  # lazy: start-up time

    if not secret:
        fail("no server secret: set NEWSQUARRY_SECRET to the server's secret, or pass --secret")
    secret = check_secret(secret)
    filters = {name: list(values) for name, values in kw.items() if values}
    expires = None
    if expires_in != "never":
        units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
        try:
            seconds = int(expires_in[:-1]) * units[expires_in[-1]]
        except (KeyError, ValueError, IndexError):
            raise click.BadParameter(
                "use e.g. 30m, 12h, 30d or never", param_hint="--expires-in"
            ) from None
        expires = int(time.time()) + seconds
    click.echo(make_key(secret, Scope(filters, since, until, expires)))


@click.command()
@click.argument("action", type=click.Choice(["status", "start", "stop"]), default="status")
@click.option("--json", "as_json", is_flag=True, help="status as JSON.")
@click.pass_obj
def daemon(obj: Context, action: str, as_json: bool) -> None:
    """Show, start or stop the resident searcher.

    The first `search`, `quotes`, `facets`, `cooccur`, `show` or `stats` on a local
    index starts it in the background: it keeps the index open and warm, and runs the
    next such commands (as this user, with their output, folder and environment) in a
    few milliseconds instead of a new process's few hundred. It exits after 10 idle
    minutes (NEWSQUARRY_DAEMON_IDLE, in seconds). NEWSQUARRY_DAEMON=0 turns it off.
    Exit code 3: none is running (status, stop).

    \b
    Examples:
      newsquarry daemon                  # is one running, for which indexes?
      newsquarry daemon start            # start it now, warming the index
      newsquarry daemon stop
    """
    # lazy: start-up time (socket, subprocess, hashlib: for this command only)
    from newsquarry.search.cli.control import ask, start_resident
    from newsquarry.search.cli.wire import enabled, socket_path

    if action == "start":
        if not enabled():
            fail("NEWSQUARRY_DAEMON is off: unset it (or set it to 1) to start one")
        folder = os.path.abspath(os.path.expanduser(obj.index_dir))
        if ask("status") is None:
            start_resident(folder)
        deadline = time.monotonic() + 120
        while (reply := ask("status")) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if reply is None:
            fail(
                f"the resident searcher did not start (see {socket_path().with_suffix('.log')})",
                5,
            )
        click.echo(f"Resident searcher running (pid {reply['pid']}).")
        return
    reply = ask(action)
    if reply is None:
        if as_json:
            click.echo(to_json({"status": "stopped"}))
        else:
            click.echo("No resident searcher is running.")
        sys.exit(3)
    if as_json:
        click.echo(to_json(reply))
    elif action == "stop":
        click.echo(f"Resident searcher stopping (pid {reply['pid']}).")
    else:
        up = time.time() - reply["started"]
        click.echo(f"Resident searcher: pid {reply['pid']}, up {up / 60:.0f} min, "
                   f"{plural(reply['served'], 'command')} served, idle "
                   f"{reply['idle_seconds']:.0f} of {reply['idle_limit']:.0f} s.")  # fmt: skip
        for entry in reply["indexes"]:
            click.echo(f"  {entry['folder']} (generation {entry['generation']})")


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL.

    \b
    Examples:
      eval "$(newsquarry completion bash)"        # in ~/.bashrc
      newsquarry completion fish > ~/.config/fish/completions/newsquarry.fish
    """
    from click.shell_completion import get_completion_class  # lazy: start-up time

    cls = get_completion_class(shell)
    group = ctx.find_root().command  # the newsquarry group (``app``)
    click.echo(cls(group, {}, "newsquarry", "_NEWSQUARRY_COMPLETE").source())
