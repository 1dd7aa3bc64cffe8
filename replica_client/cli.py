"""The ``replica-client`` command line, built on the public API only.

Subcommands:

- ``tail``: stream a primary as JSON lines, one change per line, in a
  Debezium-like envelope; stops cleanly on Ctrl-C / SIGTERM and prints the
  resume position on stderr. Changes are written a whole transaction at a
  time, so the resume position never splits a transaction.
- ``read``: decode binlog files or a directory to the same JSON lines, or to a
  human-readable view of every event (``--format text``).
- ``position``: the primary's current GTID state and file/position.
- ``demo``: start a throwaway private MariaDB primary, write sample
  transactions, stream them decoded to the terminal, stop the primary.

Connection options are the same everywhere: ``--host --port --user
--password --server-id`` (the password may come from the environment variable
``REPLICA_CLIENT_PASSWORD`` instead, so it stays out of ``ps``), TLS options,
or one DSN argument ``mariadb://user:pass@host:port``; ``--loop uvloop`` runs
on uvloop's event loop. Errors print one line
(no traceback unless ``--debug``) and exit non-zero.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from . import __version__
from .binlog.events import Event, RowsEvent
from .changes import Change, ChangeBuilder, iter_changes
from .checkpoint import Checkpoint
from .cli_progress import FileProgress, SnapshotMeter
from .config import format_address, parse_address
from .dsn import dsn_secrets, split_dsn
from .errors import ConfigError, ReplicaError
from .files import open_binlog
from .jsonvalues import change_envelope, json_value
from .position import FilePos, Gtid, parse_gtid_state
from .schema.history import SchemaHistory

__all__ = ["main"]

PASSWORD_ENV = "REPLICA_CLIENT_PASSWORD"
_log = logging.getLogger("replica_client.cli")


# -- arguments ---------------------------------------------------------------------------


def _connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--loop",
        choices=["asyncio", "uvloop"],
        default="asyncio",
        help="the event loop to run on (uvloop: pip install uvloop)",
    )
    g = p.add_argument_group("connection")
    g.add_argument("dsn", nargs="?", help="mariadb://user:pass@host:port (instead of the options)")
    g.add_argument(
        "--host",
        action="append",
        default=None,
        help="primary host (default 127.0.0.1); give it more than once (h1 --host h2:3307) "
        "to fail over to the next writable primary by GTID",
    )
    g.add_argument("--port", type=int, default=None, help="primary port (default 3306)")
    g.add_argument("--socket", default=None, help="unix socket path instead of host/port")
    g.add_argument("--user", default=None, help="replication user (default root)")
    g.add_argument(
        "--password",
        default=None,
        help=f"password (prefer the {PASSWORD_ENV} environment variable: it stays out of ps)",
    )
    g.add_argument("--server-id", type=int, default=4242, help="this replica's server_id")
    g.add_argument(
        "--tls",
        choices=["off", "required", "verify_ca", "verify_identity"],
        default="off",
        help="TLS mode",
    )
    g.add_argument(
        "--tls-ca", default=None, help="CA certificate file for verify_ca/verify_identity"
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="replica-client", description="MariaDB binlog replica: stream, read and decode."
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress on stderr")
    # The same two flags after the subcommand (replica-client tail --debug ...).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", required=True)

    tail = sub.add_parser("tail", help="stream a primary as JSON lines", parents=[common])
    _connection_args(tail)
    start = tail.add_mutually_exclusive_group()
    start.add_argument("--from-gtid", default=None, help="start after this MariaDB GTID state")
    start.add_argument("--from-file", default=None, help="start at this binlog file ...")
    start.add_argument("--from-now", action="store_true", help="start at the primary's end")
    tail.add_argument("--from-pos", type=int, default=4, help="... and this position (default 4)")
    _filter_args(tail)
    tail.add_argument("--semi-sync", choices=["on", "off", "auto"], default="off")
    tail.add_argument(
        "--ack-mode",
        choices=["auto", "receipt", "written"],
        default="auto",
        help="with semi-sync: ACK a transaction when it is read whole (auto), when it "
        "arrives (receipt), or once its lines are written and flushed (written)",
    )
    tail.add_argument("--non-blocking", action="store_true", help="stop at the end of the binlog")
    tail.add_argument("--output", default=None, help="write to this file instead of stdout")
    tail.add_argument(
        "--snapshot",
        nargs="?",
        const="consistent",
        choices=["consistent", "chunked"],
        default=None,
        help="first the tables' existing rows (op r), then the changes after them",
    )
    tail.add_argument(
        "--checkpoint",
        default=None,
        metavar="FILE",
        help="start from the checkpoint in FILE when it exists (instead of --from-*), and "
        "write the checkpoint there after each transaction written (position, GTID state "
        "and the tables' definitions there)",
    )
    tail.add_argument(
        "--schema-history",
        choices=["auto", "scan", "off"],
        default="auto",
        help="the tables' definitions where the binlog lacks them: read from the primary "
        "(auto; scan: also read the binlog from the start to now for DDL; off: none)",
    )
    _schema_args(tail)

    read = sub.add_parser(
        "read", help="decode binlog files to JSON lines or text", parents=[common]
    )
    read.add_argument("paths", nargs="+", help="binlog files or a directory")
    read.add_argument("--key-file", default=None, help="key file of an encrypted binlog")
    read.add_argument("--format", choices=["json", "text"], default="json")
    read.add_argument("--no-verify-checksum", action="store_true")
    _filter_args(read)
    read.add_argument("--output", default=None, help="write to this file instead of stdout")
    read.add_argument(
        "--schema-history",
        default=None,
        metavar="FILE",
        help="the tables' definitions at the start of the first file: a checkpoint or a "
        "schema history (JSON), for binlogs written without FULL row metadata",
    )
    _schema_args(read)

    pos = sub.add_parser(
        "position", help="the primary's current GTID state and file/pos", parents=[common]
    )
    _connection_args(pos)

    demo = sub.add_parser(
        "demo", help="stream sample transactions from a throwaway primary", parents=[common]
    )
    demo.add_argument("--rows", type=int, default=5, help="rows per sample table")
    demo.add_argument(
        "--backend",
        choices=["auto", "local", "docker"],
        default="auto",
        help="where the throwaway primary runs: the local MariaDB install, docker compose, "
        "or auto (local when mariadbd is installed, else docker compose)",
    )
    return p


def _schema_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--statements",
        choices=["error", "deliver"],
        default="error",
        help="a statement logged as SQL text that changed rows (binlog_format MIXED or "
        "STATEMENT): stop with an error, or print it as an op s line",
    )
    p.add_argument(
        "--unproven",
        choices=["error", "positional"],
        default="error",
        help="a table whose column names or types cannot be proven: stop with an error, "
        "or print its columns as @1, @2, ... with the binlog's own types",
    )


def _filter_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tables", default="", help="only these tables: db.t,db2.*")
    p.add_argument("--exclude", default="", help="never these tables: db.tmp_*")


def _connection(ns: argparse.Namespace) -> dict[str, Any]:
    """Connection keyword arguments for rc.connect from options, DSN and environment."""
    opts: dict[str, Any] = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}
    if ns.dsn:
        try:
            dsn = split_dsn(ns.dsn)
        except ValueError:
            raise ConfigError("the DSN must look like mariadb://user:pass@host:port") from None
        for key, value in (("host", dsn.host), ("port", dsn.port), ("user", dsn.user)):
            if value:
                opts[key] = value
        if dsn.password is not None:
            opts["password"] = dsn.password
        if len(dsn.hosts) > 1:
            opts["hosts"] = dsn.hosts
    for key in ("port", "user"):
        value = getattr(ns, key)
        if value is not None:
            opts[key] = value
    if ns.host:
        addresses = [parse_address(h, opts["port"]) for h in ns.host]
        opts["host"], opts["port"] = addresses[0]
        opts.pop("hosts", None)
        if len(addresses) > 1:
            opts["hosts"] = tuple(format_address(h, p) for h, p in addresses)
    if ns.password is not None:
        opts["password"] = ns.password
    elif PASSWORD_ENV in os.environ:
        opts["password"] = os.environ[PASSWORD_ENV]
    if ns.socket:
        opts["unix_socket"] = ns.socket
    opts["server_id"] = ns.server_id
    opts["tls"] = ns.tls
    if ns.tls_ca:
        opts["tls_ca"] = ns.tls_ca
    return opts


def _table_filter(ns: argparse.Namespace) -> Any:
    from .config import TableFilter

    return TableFilter.parse(ns.tables, ns.exclude)


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[TextIO]:
    if path is None:
        yield sys.stdout
        return
    with open(path, "a", encoding="utf-8") as f:
        yield f


def _line(change: Change) -> str:
    return json.dumps(change_envelope(change), ensure_ascii=False, separators=(",", ":"))


# -- read --------------------------------------------------------------------------------


def _cmd_read(ns: argparse.Namespace) -> int:
    paths = [Path(p) for p in ns.paths]
    target: Any = paths[0] if len(paths) == 1 else paths
    tables = _table_filter(ns)
    reader = open_binlog(
        target,
        key_file=ns.key_file,
        key_file_password=os.environ.get("REPLICA_CLIENT_KEY_PASSWORD"),
        verify_checksum=not ns.no_verify_checksum,
        tables=tables,
        schema_history=_history_file(ns.schema_history),
        unproven=ns.unproven,
    )
    progress = FileProgress(reader.files) if sys.stderr.isatty() else None
    with reader as events, _output(ns.output) as out:
        stream: Iterable[Event] = events
        if progress is not None:
            stream = progress.follow(events, reader)
        if ns.format == "json":
            for change in iter_changes(stream, statements=ns.statements, tables=tables):
                out.write(_line(change) + "\n")
        else:
            for event in stream:
                out.write(_describe(event, reader.event_position) + "\n")
    if progress is not None:
        progress.done()
    return 0


def _history_file(path: str | None) -> SchemaHistory | None:
    """The schema history in a file: a checkpoint's, or a history's own JSON."""
    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the schema history in {path}: {exc}") from exc
    if isinstance(data, dict) and "schema" in data and "format" not in data:
        history = Checkpoint.from_dict(data).schema_history
        if history is None:
            raise ConfigError(f"the checkpoint in {path} holds no schema history")
        return history
    try:
        return SchemaHistory.from_json(data)
    except ValueError as exc:
        raise ConfigError(f"{path} holds no schema history: {exc}") from exc


def _describe(event: Event, pos: FilePos | None) -> str:
    name = type(event).__name__
    fields: dict[str, Any] = {}
    for attr in getattr(event, "__slots__", ()):
        if attr in ("header", "table", "query_bytes", "rows"):
            continue
        fields[attr] = getattr(event, attr)
    if isinstance(event, RowsEvent):
        fields["table"] = f"{event.schema}.{event.table_name}"
        fields["rows"] = getattr(event, "rows", ())
    where = f"{pos} " if pos is not None else ""
    body = json.dumps(json_value(fields), ensure_ascii=False, default=str)
    return f"# at {where}{name} {body}"


# -- tail --------------------------------------------------------------------------------


def _start(ns: argparse.Namespace) -> Any:
    if ns.from_gtid:
        return parse_gtid_state(ns.from_gtid)
    if ns.from_file:
        return FilePos(ns.from_file, ns.from_pos)
    if ns.from_now:
        return "now"
    return "earliest"


async def _tail(ns: argparse.Namespace) -> int:
    from .aio import connect

    opts = _connection(ns)
    start = _start(ns)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    pending: list[Change] = []
    resume: tuple[Any, Any] = (None, None)
    _log.info(
        "tailing %s as user %s, server_id %s, from %s, on %s's event loop",
        opts.get("unix_socket") or format_address(opts["host"], opts["port"]),
        opts["user"],
        opts["server_id"],
        start,
        type(loop).__module__.partition(".")[0],
    )
    snapshot = ns.snapshot
    written = ns.ack_mode == "written"  # ACKed here, once the lines are out
    saved = _read_checkpoint(ns.checkpoint)
    if saved is not None:
        start = saved
    tables = _table_filter(ns)
    async with connect(
        **opts,
        start=start,
        blocking=not ns.non_blocking,
        semi_sync=ns.semi_sync,
        ack_mode="manual" if written else ns.ack_mode,
        tables=tables,
        snapshot=snapshot or False,
        schema_history=ns.schema_history,
        unproven=ns.unproven,
        statements=ns.statements,
    ) as stream:
        builder = ChangeBuilder(
            statements=ns.statements, tables=tables, binlog_format=stream.binlog_format
        )
        resume = (stream.position, stream.gtid_state)
        items: Any = stream.changes() if snapshot else stream
        meter = SnapshotMeter() if snapshot and sys.stderr.isatty() else None
        with _output(ns.output) as out:
            async for item in _until(items, stop):
                if meter is not None:
                    meter.update(stream.snapshot_progress)
                    if stream.snapshot_state is None:
                        meter.done()
                        meter = None
                if isinstance(item, Change):
                    pending.append(item)
                else:
                    pending.extend(builder.feed(item))
                boundary = (stream.position, stream.gtid_state)
                if boundary != resume or (snapshot and stream.snapshot_state is not None):
                    # A transaction ended (or a row was read): write it whole, then
                    # move the resume point.
                    for change in pending:
                        out.write(_line(change) + "\n")
                    out.flush()
                    pending.clear()
                    resume = boundary
                    if ns.checkpoint is not None and stream.snapshot_state is None:
                        _write_checkpoint(ns.checkpoint, stream.checkpoint)
                    if written:
                        await stream.ack()
            if meter is not None:
                meter.done()
            if snapshot and stream.snapshot_state is not None:
                sys.stderr.write(
                    "replica-client: stopped during the snapshot; run it again to snapshot anew\n"
                )
                return 0
    if ns.checkpoint is not None:
        how = f"--checkpoint {ns.checkpoint}"
    else:
        how = _resume_args(resume, start)
    sys.stderr.write(f"replica-client: stopped; resume with {how}\n")
    return 0


def _read_checkpoint(path: str | None) -> Checkpoint | None:
    if path is None or not Path(path).exists():
        return None
    try:
        return Checkpoint.from_json(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the checkpoint {path}: {exc}") from exc


def _write_checkpoint(path: str, checkpoint: Checkpoint) -> None:
    """Write ``checkpoint`` to ``path`` whole or not at all (a new file renamed over it)."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(checkpoint.to_json() + "\n", encoding="utf-8")
    os.replace(tmp, target)


async def _until(items: AsyncIterator[Any], stop: asyncio.Event) -> AsyncIterator[Any]:
    """The items of ``items`` until it ends or ``stop`` is set."""
    iterator = aiter(items)
    while not stop.is_set():
        nxt = asyncio.ensure_future(anext(iterator))
        waiter = asyncio.ensure_future(stop.wait())
        done, _ = await asyncio.wait({nxt, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if nxt not in done:
            nxt.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await nxt
            return
        waiter.cancel()
        try:
            yield nxt.result()
        except StopAsyncIteration:
            return


def _resume_args(resume: tuple[Any, Any], start: Any) -> str:
    """The start options that continue right after the last transaction written."""
    pos, gtid = resume
    parts = []
    if gtid:
        parts.append(f"--from-gtid {gtid}")
    if pos is not None:
        parts.append(f"--from-file {pos.file} --from-pos {pos.pos}")
    if parts:
        return " or ".join(parts)
    # Nothing was written: the same start as this run.
    if isinstance(start, Gtid):
        return f"--from-gtid {start}"
    if isinstance(start, FilePos):
        return f"--from-file {start.file} --from-pos {start.pos}"
    return "--from-now" if start == "now" else "(no option: from the earliest binlog)"


# -- position ------------------------------------------------------------------------------


async def _position(ns: argparse.Namespace) -> int:
    from .aio import ReplicaConfig
    from .aio.control import current_position, open_control, server_info

    config = ReplicaConfig.from_kwargs(**_connection(ns))
    _log.info("asking %s (user %s) for its binlog position", config.address, config.user)
    conn = await open_control(config)
    try:
        info = await server_info(conn)
        filepos, gtid = await current_position(conn)
    finally:
        conn.close()
    print(json.dumps({
        "server_id": info.server_id,
        "version": info.version,
        "gtid": str(gtid) if gtid is not None else "",
        "file": filepos.file if filepos is not None else None,
        "pos": filepos.pos if filepos is not None else None,
    }))  # fmt: skip
    return 0


# -- entry point ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    ns = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if ns.debug else logging.INFO if ns.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        if ns.command == "read":
            return _cmd_read(ns)
        if ns.command == "tail":
            return _run(_tail(ns), ns.loop)
        if ns.command == "position":
            return _run(_position(ns), ns.loop)
        if ns.command == "demo":
            from .demo import run_demo

            return run_demo(rows=ns.rows, backend=ns.backend)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if ns.debug:
            raise
        what = str(exc) if isinstance(exc, ReplicaError) else f"{type(exc).__name__}: {exc}"
        sys.stderr.write(f"replica-client: error: {_redact(what, ns)}\n")
        return 1
    return 2


def _run(main: Coroutine[Any, Any, int], loop: str) -> int:
    """``main`` on asyncio's own event loop or on uvloop's."""
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            main.close()
            raise ConfigError(
                "--loop uvloop: uvloop is not installed (pip install uvloop)"
            ) from None
        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def _redact(text: str, ns: argparse.Namespace) -> str:
    """Belt and braces: no password ever reaches the terminal."""
    secrets = [getattr(ns, "password", None), os.environ.get(PASSWORD_ENV)]
    dsn = getattr(ns, "dsn", None)
    if dsn:
        secrets.extend(dsn_secrets(dsn))
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
            text = text.replace(quote(secret, safe=""), "***")
    return " ".join(text.split())


if __name__ == "__main__":
    raise SystemExit(main())
