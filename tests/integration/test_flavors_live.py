"""The same guarantees on every server flavour: MariaDB 10.11, MariaDB 11.8, MySQL 9.7.

For each flavour, against a private primary:

- every start (GTID state, file position, "now"): the changes that follow, and
  nothing before;
- positions: each change's position is where the server says its rows event
  starts (``SHOW BINLOG EVENTS``; MariaDB 11.8 writes ``log_pos`` 0 inside
  transactions), and after the last transaction ``stream.gtid_state`` and
  ``stream.position`` equal the server's own GTID state and binlog end;
- the dump thread KILLed in the middle of a transaction: the stream resumes and
  hands out every row once; after a GTID start it resumes by GTID (a KILL in
  the first transaction of a file whose earlier transactions the primary
  skipped; on MySQL, a transaction of the start set written after a
  reconnect stays excluded);
- semi-sync: 1000 commits at a 500 ms timeout, every one acknowledged in time,
  with a ``changes()`` consumer that stops right after the last change.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

import replica_client as rc
from replica_client.binlog.events import WriteRowsEvent
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests.integration._stream_support import config_for, repl_user

__all__: list[str] = []

SERVERS = (
    ServerVariant(),
    ServerVariant(flavor="mariadb", version="11.8"),
    ServerVariant(flavor="mysql", version="9.7"),
)
_IDS = [v.label for v in SERVERS]


@pytest.fixture(params=SERVERS, ids=_IDS)
def server(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> Iterator[MariaDBServer]:
    yield _prepared(mariadb_primary_factory(request.param))


@pytest.fixture
def mysql_server(mariadb_primary_factory: PrimaryFactory) -> Iterator[MariaDBServer]:
    yield _prepared(mariadb_primary_factory(SERVERS[2]))


def _prepared(srv: MariaDBServer) -> MariaDBServer:
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_flavor")
    srv.sql("DROP TABLE IF EXISTS rc_flavor.t")
    srv.sql("CREATE TABLE rc_flavor.t (id INT PRIMARY KEY, note VARCHAR(64), n INT)")
    return srv


def _mariadb(srv: MariaDBServer) -> bool:
    return srv.flavor == "mariadb"


def _gtid_state(srv: MariaDBServer) -> rc.Gtid | rc.MysqlGtidSet:
    if _mariadb(srv):
        return rc.Gtid(str(srv.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0] or ""))
    return rc.MysqlGtidSet(str(srv.sql("SELECT @@GLOBAL.gtid_executed")[0][0] or ""))


def _domains(srv: MariaDBServer) -> dict[str, str]:
    """A MariaDB primary's GTID state by domain: ``{"0": "0-1-5", ...}``."""
    return {g.split("-")[0]: g for g in str(_gtid_state(srv)).split(",") if g}


def _here(srv: MariaDBServer) -> rc.FilePos:
    file, pos = srv.binlog_position()
    return rc.FilePos(file, pos)


def _rows_events(srv: MariaDBServer, file: str) -> dict[int, str | None]:
    """Where each rows event of ``file`` starts -> the GTID of its transaction, as the
    server lists them (the GTID event before it: ``BEGIN GTID 0-1-5`` on MariaDB,
    ``SET @@SESSION.GTID_NEXT= 'uuid:5'`` on MySQL)."""
    found: dict[int, str | None] = {}
    gtid: str | None = None
    for row in srv.sql(f"SHOW BINLOG EVENTS IN '{file}'"):
        kind, info = str(row[2]).lower(), str(row[5])
        if kind == "gtid":
            named = re.search(r"\d+-\d+-\d+|'([^']+)'", info)
            assert named is not None, info
            gtid = named.group(1) or named.group(0)
        elif "rows" in kind:
            found[int(row[1])] = gtid
    return found


async def _changes(cfg: rc.ReplicaConfig) -> tuple[list[rc.Change], rc.BinlogStream]:
    async with rc.connect(cfg) as stream:
        changes = [c async for c in stream.changes() if c.table == "t"]
    return changes, stream


@pytest.mark.parametrize("start", ["gtid", "file", "now"])
async def test_starts_positions_and_state_equal_the_servers(
    server: MariaDBServer, start: str
) -> None:
    srv = server
    srv.sql("INSERT INTO rc_flavor.t VALUES (1, 'before the start', 0)")
    begin: Any = {"gtid": _gtid_state(srv), "file": _here(srv), "now": "now"}[start]
    if start == "now":
        # "now" resolves on connect: open first, then write
        cfg = config_for(srv, start="now")
        async with rc.connect(cfg) as stream:
            await asyncio.to_thread(_write_batch, srv)
            got = []
            async with asyncio.timeout(30):
                async for change in stream.changes():
                    if change.table == "t":
                        got.append(change)
                    if len(got) == 7:
                        break
    else:
        await asyncio.to_thread(_write_batch, srv)
        got, stream = await _changes(config_for(srv, start=begin, blocking=False))
    assert [(c.op, (c.after or c.before or {})["id"]) for c in got] == [
        ("insert", 10),
        ("insert", 11),
        ("insert", 12),
        ("update", 10),
        ("update", 11),
        ("delete", 12),
        ("insert", 13),
    ]
    # every change sits where the server says its rows event starts, and names
    # the GTID of the transaction the server lists it in (two transactions here)
    for change in got:
        assert change.position is not None
        rows_events = _rows_events(srv, change.position.file)
        assert change.position.pos in rows_events
        assert change.gtid == rows_events[change.position.pos]
    assert len({c.gtid for c in got}) == 2
    if start != "now":
        # after the last transaction: the server's own GTID state and binlog end
        assert stream.position == _here(srv)
        if _mariadb(srv) or start == "gtid":
            assert stream.gtid_state == _gtid_state(srv)
        else:  # MySQL, from a position inside a file: the executed set is not known
            assert stream.gtid_state == rc.Gtid("")


def _write_batch(srv: MariaDBServer) -> None:
    srv.sql_many(
        [
            "INSERT INTO rc_flavor.t VALUES (10, 'a', 1), (11, 'b', 2), (12, 'c', 3)",
            "BEGIN",
            "UPDATE rc_flavor.t SET n = n + 100 WHERE id IN (10, 11)",
            "DELETE FROM rc_flavor.t WHERE id = 12",
            "INSERT INTO rc_flavor.t VALUES (13, 'd', 4)",
            "COMMIT",
        ]
    )


def _killable(srv: MariaDBServer, start: Any, **options: Any) -> rc.ReplicaConfig:
    """A stream that reconnects at once after its dump thread is KILLed."""
    reconnect = rc.ReconnectPolicy(initial_delay=0.05, max_delay=0.2)
    return config_for(srv, start=start, reconnect=reconnect, **options)


def _dump_threads(srv: MariaDBServer, user: str) -> list[int]:
    return [
        int(row[0])
        for row in srv.sql("SHOW PROCESSLIST")
        if str(row[1]) == user and "binlog dump" in str(row[4]).lower()
    ]


async def test_kill_of_the_dump_thread_mid_transaction_delivers_every_row_once(
    server: MariaDBServer,
) -> None:
    srv = server
    srv.sql("DROP TABLE IF EXISTS rc_flavor.wide")
    srv.sql("CREATE TABLE rc_flavor.wide (id INT PRIMARY KEY, body TEXT)")
    start = _gtid_state(srv)
    # big transactions (many rows events each; all of them more than the socket
    # buffers hold): a KILL lands inside one, and so does the connection loss the
    # stream sees once it has handed out what was buffered
    for batch in range(5):
        values = ",".join(f"({batch * 2000 + i}, REPEAT('x', 2500))" for i in range(2000))
        srv.sql_many(["BEGIN", f"INSERT INTO rc_flavor.wide VALUES {values}", "COMMIT"])
    cfg = _killable(srv, start, max_buffered_events=8)
    seen: list[int] = []
    kills = 0
    async with rc.connect(cfg) as stream:
        async with asyncio.timeout(120):
            async for event in stream:
                if isinstance(event, WriteRowsEvent) and event.table.table == "wide":
                    seen.extend(int(row[0]) for row in event.rows)
                    # once per connection, after it delivered some rows of its own
                    if kills < 3 and kills == stream.reconnects and len(seen) > 1000 * (kills + 1):
                        for thread in _dump_threads(srv, cfg.user):
                            srv.sql(f"KILL {thread}")
                            kills += 1
                    if len(seen) >= 10_000:
                        break
        reconnects = stream.reconnects
    # (the last kill may come after the final rows were received: no reconnect then)
    assert kills >= 2 and kills - 1 <= reconnects <= kills
    assert len(seen) == len(set(seen)) == 10_000
    assert seen == sorted(seen)


async def test_a_kill_in_the_first_transaction_after_a_gtid_start_resumes_that_transaction(
    server: MariaDBServer,
) -> None:
    """The dump starts by GTID in a file whose earlier transactions the primary skips:
    a cut in the first transaction it sends resumes by GTID, not at the file's start;
    a second cut in the same transaction, after the restarted dump's header events,
    resumes it again."""
    srv = server
    srv.sql("DROP TABLE IF EXISTS rc_flavor.wide")
    srv.sql("CREATE TABLE rc_flavor.wide (id INT PRIMARY KEY, body TEXT)")
    srv.sql("FLUSH BINARY LOGS")
    for i in range(3):  # in the same file, before the start: never delivered
        srv.sql(f"INSERT INTO rc_flavor.t VALUES ({i}, 'before the start', 0)")
    start = _gtid_state(srv)
    # more than the socket buffers hold: the connection breaks inside it, twice
    values = ",".join(f"({i}, REPEAT('x', 2500))" for i in range(8000))
    srv.sql_many(["BEGIN", f"INSERT INTO rc_flavor.wide VALUES {values}", "COMMIT"])
    srv.sql("INSERT INTO rc_flavor.t VALUES (10, 'after', 0)")
    cfg = _killable(srv, start, max_buffered_events=8)
    rows: list[int] = []
    others: list[int] = []
    kills = 0
    async with rc.connect(cfg) as stream:
        async with asyncio.timeout(60):
            async for change in stream.changes():
                if change.table == "wide":
                    rows.append(int((change.after or {})["id"]))
                    # at the first row, and at the first row the next connection sent
                    if len(rows) == 1 or (stream.reconnects == 1 and kills == 1):
                        for thread in _dump_threads(srv, cfg.user):
                            srv.sql(f"KILL {thread}")
                        kills += 1
                elif change.table == "t":
                    others.append(int((change.after or {})["id"]))
                    break
        reconnects = stream.reconnects
    assert kills == reconnects == 2
    assert rows == list(range(8000))
    assert others == [10]


async def test_a_gtid_start_excludes_its_transactions_after_a_reconnect(
    server: MariaDBServer,
) -> None:
    """The primary skips the start's transactions wherever they sit in its binlog;
    after a reconnect past the first transaction they stay excluded (the stream
    resumes by its GTID state, not at a file position that precedes them).

    MariaDB: a start ahead in another domain than the first change's (the
    primary skips that domain's transactions up to it); MySQL: a set naming a
    transaction written after the reconnect (a file position resume sent it)."""
    srv = server
    excluded: list[str] = []
    if _mariadb(srv):
        before = _domains(srv)
        srv.sql("INSERT INTO rc_flavor.t VALUES (1, 'first', 0)")
        srv.sql_many(
            [
                "SET SESSION gtid_domain_id = 7",
                "INSERT INTO rc_flavor.t VALUES (2, 'in the start state', 0)",
                "SET SESSION gtid_domain_id = 0",
            ]
        )
        # before the first change in domain 0, after the second in domain 7
        start: rc.Gtid | rc.MysqlGtidSet = rc.Gtid(
            ",".join({**before, "7": _domains(srv)["7"]}.values())
        )
    else:
        foreign = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
        start = rc.MysqlGtidSet(f"{_gtid_state(srv)},{foreign}:1")
        srv.sql("INSERT INTO rc_flavor.t VALUES (1, 'first', 0)")
        excluded = [
            f"SET gtid_next = '{foreign}:1'",
            "INSERT INTO rc_flavor.t VALUES (2, 'in the start set', 0)",
            "SET gtid_next = 'AUTOMATIC'",
        ]
    cfg = _killable(srv, start)
    got: list[int] = []

    async def write_once_reconnected(stream: rc.BinlogStream) -> None:
        while stream.reconnects == 0:
            await asyncio.sleep(0.02)
        await asyncio.to_thread(
            srv.sql_many, [*excluded, "INSERT INTO rc_flavor.t VALUES (3, 'last', 0)"]
        )

    async with rc.connect(cfg) as stream:
        writer: asyncio.Task[None] | None = None
        async with asyncio.timeout(60):
            async for change in stream.changes():
                if change.table != "t":
                    continue
                got.append(int((change.after or {})["id"]))
                if len(got) == 1:
                    # a cut after the first transaction (MySQL: its checkpoint;
                    # MariaDB: before the primary's GTID_LIST that ends the
                    # skipping, so the transaction is skipped again)
                    for thread in _dump_threads(srv, cfg.user):
                        srv.sql(f"KILL {thread}")
                    writer = asyncio.create_task(write_once_reconnected(stream))
                if got[-1] == 3:
                    break
        assert writer is not None
        await writer
    assert got == [1, 3]


def _status_prefix(srv: MariaDBServer) -> str:
    return "Rpl_semi_sync_master_" if _mariadb(srv) else "Rpl_semi_sync_source_"


def _semi(srv: MariaDBServer, name: str) -> str:
    rows = srv.sql("SHOW GLOBAL STATUS LIKE %s", (_status_prefix(srv) + name,))
    return str(rows[0][1])


def _commit_each(srv: MariaDBServer, first: int, count: int) -> None:
    conn = pymysql.connect(
        host=srv.host, port=srv.port, user="root", password=srv.password, autocommit=True
    )
    try:
        with conn.cursor() as cur:
            for i in range(first, first + count):
                cur.execute("INSERT INTO rc_flavor.t VALUES (%s, 'semi-sync', 0)", (i,))
    finally:
        conn.close()


@pytest.mark.parametrize("ack_mode", ["auto", "receipt"])
async def test_semi_sync_every_commit_acknowledged(server: MariaDBServer, ack_mode: str) -> None:
    srv = server
    commits = 1000
    cfg = config_for(srv, start="now", semi_sync="on", ack_mode=ack_mode)
    async with rc.connect(cfg) as stream:
        assert stream.semi_sync
        changes = stream.changes()
        async with asyncio.timeout(30):
            while _semi(srv, "clients") != "1":
                await asyncio.sleep(0.05)
        # commits made while no semi-sync replica was connected switched the primary
        # to asynchronous mode; it switches back once our ACKs catch up
        warm = 100_000
        async with asyncio.timeout(30):
            while _semi(srv, "status") != "ON":
                await asyncio.to_thread(_commit_each, srv, warm, 1)
                warm += 1
                async for _ in changes:
                    break
        yes = int(_semi(srv, "yes_tx"))
        no = int(_semi(srv, "no_tx"))
        writer = threading.Thread(target=_commit_each, args=(srv, 1, commits))
        writer.start()
        seen = 0
        async with asyncio.timeout(120):
            async for change in changes:
                if change.table == "t" and change.after and change.after["id"] <= commits:
                    seen += 1
                    if seen == commits:
                        break  # nothing more is asked for
            await asyncio.to_thread(writer.join)
        assert int(_semi(srv, "yes_tx")) - yes == commits
        assert int(_semi(srv, "no_tx")) - no == 0
