"""The blocking runner of :mod:`.queries`: PyMySQL, and a replication connection for scans.

Driver layer, for places without an event loop (the Spark driver) and for the
asyncio runner's binlog scans (run in a thread). :func:`run` drives a
procedure of :mod:`.queries` to its result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..binlog.events import GtidEvent, MysqlGtidEvent, QueryEvent
from ..position import FilePos, Gtid, MysqlGtidSet
from .queries import Procedure, Query, QueryFailed, ScannedQuery, ScanQueries, client_error

if TYPE_CHECKING:
    from ..aio.config import ReplicaConfig

__all__ = ["connect_blocking", "run", "scan_queries"]

T = TypeVar("T")


def connect_blocking(config: ReplicaConfig) -> Any:
    """A PyMySQL connection with the replica's address, account and TLS settings.

    Raises:
        ConnectionLostError: the primary cannot be reached.
        ServerError: the primary refused the login.
    """
    import pymysql

    try:
        return pymysql.connect(
            host=config.host,
            port=config.port,
            unix_socket=config.unix_socket,
            user=config.user,
            password=config.password,
            ssl=config.ssl_context(),
            autocommit=True,
            connect_timeout=config.connect_timeout,
            charset="utf8mb4",
        )
    except Exception as exc:
        raise client_error(exc, config.address) from exc


def _answer(conn: Any, query: Query, address: str) -> list[tuple[Any, ...]] | QueryFailed:
    try:
        with conn.cursor() as cur:
            cur.execute(query.sql, query.args or None)
            return [tuple(r) for r in cur.fetchall()]
    except Exception as exc:
        args: tuple[Any, ...] = tuple(exc.args)
        if args and isinstance(args[0], int) and args[0] in query.tolerate:
            return QueryFailed(args[0], str(args[1]) if len(args) > 1 else "")
        raise client_error(exc, address) from exc


def run(
    config: ReplicaConfig,
    procedure: Procedure[T],
    *,
    conn: Any = None,
    scan: Callable[[ReplicaConfig, FilePos | Gtid | MysqlGtidSet], list[ScannedQuery]]
    | None = None,
) -> T:
    """Drive ``procedure`` over a connection (``conn``, or one opened and closed here)."""
    own = conn is None
    if own:
        conn = connect_blocking(config)
    try:
        answer: Any = None
        while True:
            try:
                request = procedure.send(answer)
            except StopIteration as stop:
                result: T = stop.value
                return result
            if isinstance(request, ScanQueries):
                answer = (scan or scan_queries)(config, request.start)
            else:
                answer = _answer(conn, request, config.address)
    finally:
        if own:
            conn.close()


def scan_queries(config: ReplicaConfig, start: FilePos | Gtid | MysqlGtidSet) -> list[ScannedQuery]:
    """Every QueryEvent of the binlog from ``start`` to its end now, read over a
    replication connection (the config's server id; rows are not decoded)."""
    import dataclasses

    from ..blocking import BlockingReplica
    from ..session import ReplicaSession

    settings = dataclasses.replace(config.registration_settings(start), blocking=False)
    options = dataclasses.replace(config.decoder, decode_rows=False)
    session = ReplicaSession(settings, decoder_options=options)
    out: list[ScannedQuery] = []
    gtid: str | None = None
    with BlockingReplica(
        session,
        config.host,
        config.port,
        ssl_context=config.ssl_context(),
        connect_timeout=config.connect_timeout,
    ) as replica:
        for item in replica.items():
            event = item.event
            if isinstance(event, GtidEvent | MysqlGtidEvent):
                gtid = event.gtid
            elif isinstance(event, QueryEvent):
                out.append(ScannedQuery(FilePos(item.file, item.start), gtid, event))
    return out
