"""Events written by the private primary, for the live tests of ``tests/binlog``.

``capture(srv, conn, statements)`` runs statements into a binlog file of their
own and decodes it; ``SHOW BINLOG EVENTS`` of the same file is kept beside
the events, and the framing and types are checked against it on the way. The
oracle of those tests is always the server: the session variables a test SETs
and reads back with SELECT, ``@@gtid_binlog_pos`` / ``@@gtid_binlog_state``,
``SHOW BINARY LOGS`` and ``SHOW BINLOG EVENTS`` (positions, types and Info
text), and values the server recomputes from what was decoded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pymysql

import replica_client as rc
from replica_client.binlog.events import (
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    DeleteRowsEvent,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    GtidListEvent,
    IntvarEvent,
    QueryEvent,
    RandEvent,
    RotateEvent,
    StopEvent,
    TableMapEvent,
    UpdateRowsEvent,
    UserVarEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
)
from replica_client.testing.server import MariaDBServer

__all__ = [
    "SCHEMA",
    "Captured",
    "Shown",
    "capture",
    "connect",
    "one",
    "read",
    "show",
]

SCHEMA = "live_ev"

#: SHOW BINLOG EVENTS Event_type -> decoded class.
SHOW_TYPES: dict[str, type[Event]] = {
    "Format_desc": FormatDescriptionEvent,
    "Gtid_list": GtidListEvent,
    "Binlog_checkpoint": BinlogCheckpointEvent,
    "Gtid": GtidEvent,
    "Query": QueryEvent,
    "Annotate_rows": AnnotateRowsEvent,
    "Table_map": TableMapEvent,
    "Write_rows_v1": WriteRowsEvent,
    "Update_rows_v1": UpdateRowsEvent,
    "Delete_rows_v1": DeleteRowsEvent,
    "Xid": XidEvent,
    "Intvar": IntvarEvent,
    "RAND": RandEvent,
    "User var": UserVarEvent,
    "XA_prepare": XaPrepareEvent,
    "Rotate": RotateEvent,
    "Stop": StopEvent,
}


@dataclass(frozen=True)
class Shown:
    pos: int
    type: str
    end: int
    info: str


@dataclass
class Captured:
    name: str
    events: list[tuple[int, Event]]
    shown: list[Shown]

    def of(self, cls: type[Event]) -> list[Any]:
        return [e for _, e in self.events if isinstance(e, cls)]

    def info_at(self, pos: int) -> str:
        return next(s.info for s in self.shown if s.pos == pos)

    def with_pos(self, cls: type[Event]) -> Iterator[tuple[int, Any]]:
        return ((p, e) for p, e in self.events if isinstance(e, cls))


def connect(srv: MariaDBServer) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(
        host=srv.host,
        port=srv.port,
        user=srv.user,
        password=srv.password,
        autocommit=True,
        charset="utf8mb4",
    )


def one(conn: pymysql.connections.Connection[Any], query: str) -> Any:
    with conn.cursor() as cur:
        cur.execute(query)
        row = cur.fetchone()
    assert row is not None
    return row[0] if len(row) == 1 else row


def show(srv: MariaDBServer, name: str) -> list[Shown]:
    rows = srv.sql(f"SHOW BINLOG EVENTS IN '{name}'")
    return [Shown(int(r[1]), str(r[2]), int(r[4]), str(r[5])) for r in rows]


def read(srv: MariaDBServer, name: str, **kwargs: Any) -> list[tuple[int, Event]]:
    path = next(f for f in srv.binlog_files() if f.name == name)
    out: list[tuple[int, Event]] = []
    with rc.open_binlog(path, **kwargs) as reader:
        for event in reader:
            assert reader.event_position is not None
            out.append((reader.event_position.pos, event))
    return out


def capture(
    srv: MariaDBServer, conn: pymysql.connections.Connection[Any], statements: Sequence[str]
) -> Captured:
    """Run ``statements`` on ``conn`` into a binlog file of their own; decode it."""
    srv.sql("FLUSH BINARY LOGS")
    name = srv.binlog_files()[-1].name
    with conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)
    srv.sql("FLUSH BINARY LOGS")
    captured = Captured(name, read(srv, name), show(srv, name))
    # Framing and types agree with the server's own listing.
    assert [(p, type(e)) for p, e in captured.events] == [
        (s.pos, SHOW_TYPES[s.type]) for s in captured.shown
    ]
    assert [e.log_pos for _, e in captured.events] == [s.end for s in captured.shown]
    return captured
