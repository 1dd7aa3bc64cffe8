"""What a question to the primary is made of, and the loop that answers it. No I/O.

A question is a *procedure*: a generator that yields what it needs, a
:class:`Query` (SQL text and arguments) or a :class:`ScanQueries` (the
QueryEvents of a binlog range, read over a replication connection), gets the
answer sent back, and returns its result. :func:`drive` is the one loop that
runs a procedure over any way of answering a query: the project's own client
connection (:mod:`.blocking`), a PyMySQL connection inside a snapshot
transaction (the Spark executors), or aiomysql (:func:`replica_client.aio.
control.drive_async`, the same loop with ``await``). A query that fails is
thrown into the procedure, so a ``finally`` in it (``UNLOCK TABLES``) still
runs on the same connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from ..binlog.events import QueryEvent
from ..codec import server_text
from ..position import FilePos, Gtid, MysqlGtidSet

__all__ = [
    "ACCESS_DENIED",
    "Answer",
    "Done",
    "Procedure",
    "Query",
    "QueryFailed",
    "ScanQueries",
    "ScannedQuery",
    "advance",
    "drive",
    "drive_awaiting",
    "one_row",
    "sql_literal",
    "text_rows",
    "tolerated",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Query:
    """One statement; its answer is the list of result rows (tuples of text, numbers
    or None).

    ``tolerate``: server error numbers that are an answer rather than a failure
    (the runner sends a :class:`QueryFailed` back instead of raising).
    """

    sql: str
    args: tuple[Any, ...] = ()
    tolerate: frozenset[int] = frozenset()

    @property
    def text(self) -> str:
        """The statement with its ``args`` in place (``%s``) as SQL literals."""
        if not self.args:
            return self.sql
        return self.sql % tuple(sql_literal(a) for a in self.args)


def sql_literal(value: object) -> str:
    """``value`` as an SQL literal that reads the same under every sql_mode: numbers
    as they are, text as ``CONVERT(X'..' USING utf8mb4)``, None as NULL."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    text = str(value).encode("utf-8")
    return f"CONVERT(X'{text.hex()}' USING utf8mb4)" if text else "''"


@dataclass(frozen=True, slots=True)
class QueryFailed:
    """A tolerated error: the server refused the statement with ``errno``."""

    errno: int
    message: str


@dataclass(frozen=True, slots=True)
class ScannedQuery:
    """A QueryEvent met by :class:`ScanQueries`, where it sits in the binlog."""

    position: FilePos
    gtid: str | None
    event: QueryEvent


@dataclass(frozen=True, slots=True)
class ScanQueries:
    """Read the binlog from ``start`` (None: the first file the primary has) to its end
    (now) over a replication connection; the answer is every QueryEvent met (a list of
    :class:`ScannedQuery`)."""

    start: FilePos | Gtid | MysqlGtidSet | None


#: What a runner sends back into a procedure.
Answer = list[tuple[Any, ...]] | QueryFailed | list[ScannedQuery]
#: A procedure: yields what it needs, gets the answer, returns its result.
Procedure = Generator[Query | ScanQueries, Any, T]

#: Error numbers of a missing privilege (1227: "Access denied; you need ... privilege").
ACCESS_DENIED: Final = frozenset({1227, 1142, 1143, 1044, 1045})


@dataclass(frozen=True, slots=True)
class Done:
    """A procedure's result (what :func:`advance` gives once it returned)."""

    value: Any


def advance(
    procedure: Procedure[T], reply: Any, failure: BaseException | None = None
) -> Query | ScanQueries | Done:
    """One step of a procedure: the answer to its last request (``reply``), or the
    failure to throw in at it; its next request, or :class:`Done` with its result.
    What the procedure lets out is raised. The runners' one step, sync or async."""
    try:
        return procedure.send(reply) if failure is None else procedure.throw(failure)
    except StopIteration as stop:
        return Done(stop.value)


def drive(procedure: Procedure[T], answer: Callable[[Query | ScanQueries], Answer]) -> T:
    """Run ``procedure`` to its result, each request answered by ``answer``.

    An exception of ``answer`` is thrown into the procedure at the request that
    failed (its ``finally`` blocks may still ask, and are answered); whatever the
    procedure lets out is raised here.
    """
    step = advance(procedure, None)
    while not isinstance(step, Done):
        try:
            reply = answer(step)
        except Exception as exc:  # the answer failed: the procedure decides
            step = advance(procedure, None, exc)
        else:
            step = advance(procedure, reply)
    result: T = step.value
    return result


async def drive_awaiting(
    procedure: Procedure[T], answer: Callable[[Query | ScanQueries], Awaitable[Answer]]
) -> T:
    """:func:`drive` for an answer that is awaited (the asyncio runners'); the same
    rules."""
    step = advance(procedure, None)
    while not isinstance(step, Done):
        try:
            reply = await answer(step)
        except Exception as exc:  # the answer failed: the procedure decides
            step = advance(procedure, None, exc)
        else:
            step = advance(procedure, reply)
    result: T = step.value
    return result


def tolerated(request: Query, exc: BaseException) -> QueryFailed | None:
    """``exc`` as the answer to ``request`` when its error number is one the query
    tolerates (the library's ``ServerError`` or a client driver's error); else None."""
    errno = getattr(exc, "errno", None)
    if not isinstance(errno, int):
        args = getattr(exc, "args", ())
        errno = args[0] if args and isinstance(args[0], int) else None
    if errno is None or errno not in request.tolerate:
        return None
    message = getattr(exc, "message", None) or (exc.args[1] if len(exc.args) > 1 else str(exc))
    return QueryFailed(errno, str(message))


def text_rows(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows of a connection that returns bytes (``use_unicode=False``) as the procedures
    read them: text as ``str`` (the server's text policy), numbers and None as they are."""
    return [
        tuple(server_text(v) if isinstance(v, bytes | bytearray) else v for v in row)
        for row in rows
    ]


def one_row(rows: Answer) -> tuple[Any, ...]:
    """The first row of an answer.

    Raises:
        LookupError: the statement returned no row (or was refused).
    """
    if isinstance(rows, QueryFailed) or not rows:
        raise LookupError("the query returned no row")
    row = rows[0]
    assert isinstance(row, tuple)
    return row
