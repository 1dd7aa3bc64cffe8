"""Snapshot, then stream, against live servers of each flavour.

* values: each generated table (tests/gen_oracle) is snapshotted, then copied
  with ``INSERT INTO c SELECT * FROM t`` after the snapshot point; every row
  read by the snapshot must equal the same row decoded from the copy's binlog
  events (which the generated oracle proves equal to SELECT);
* the seam: writers insert, update (also rows already read and not yet read),
  delete and change primary keys during the whole snapshot, in consistent and
  chunked mode; the consumer crashes in the middle of the snapshot (its last
  checkpoint, ``stream.snapshot_state``, kept with the mirror it had then) and
  resumes from it. Replaying ``read`` and the stream's changes onto a mirror
  must give exactly ``SELECT *`` at the end; a read of a key the mirror already
  has, an insert of a present key, an update or delete of a missing one, or a
  change delivered twice fails the test;
* DDL during the snapshot: a table altered before its consistent read, or
  between two of its chunks, is read again at a new point in its new layout;
  a TRUNCATE between two chunks raises SnapshotError;
* one table on demand (`stream.snapshot_table`) in the middle of a stream,
  with writers on it;
* one table on demand (``stream.snapshot_table``) in the middle of a stream,
  with writers on it;
* clear errors: chunked mode on a table without a primary key, a table that
  does not exist, ``binlog_row_metadata=NO_LOG`` on MariaDB.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter
from typing import Any

import pymysql
import pytest

import replica_client as rc
from replica_client.changes import Change
from replica_client.snapshot import SnapshotState
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import DatabaseServer, ServerVariant
from tests import loops, oracle
from tests.gen_oracle.run import run_workload
from tests.integration._stream_support import next_server_id

__all__: list[str] = []

SERVERS: dict[str, tuple[ServerVariant, range]] = {
    "mariadb-10.11": (ServerVariant(), range(101, 111)),
    "mariadb-11.8": (ServerVariant(flavor="mariadb", version="11.8"), range(1101, 1111)),
    "mysql-9.7": (ServerVariant(flavor="mysql", version="9.7"), range(2101, 2111)),
}

SNAP_USER = "rc_snap"
SNAP_PASSWORD = "rc-snap-pw-3"


def _server(factory: PrimaryFactory, name: str) -> DatabaseServer:
    srv = factory(SERVERS[name][0])
    # What the README asks of a snapshot account: a replica's grants, SELECT,
    # and on MySQL RELOAD (the read point is taken under a brief global read lock).
    grants = "REPLICATION SLAVE, REPLICATION CLIENT, SELECT"
    grants += ", BINLOG MONITOR" if srv.variant.flavor == "mariadb" else ", RELOAD"
    srv.create_user(SNAP_USER, SNAP_PASSWORD, grants=grants)
    return srv


def _config(srv: DatabaseServer, **options: Any) -> rc.ReplicaConfig:
    return rc.ReplicaConfig.from_kwargs(
        host=srv.host,
        port=srv.port,
        user=SNAP_USER,
        password=SNAP_PASSWORD,
        server_id=next_server_id(),
        heartbeat_period=1.0,
        connect_timeout=20.0,
        **options,
    )


# -- values ----------------------------------------------------------------------------------


async def _read_then_copy(
    srv: DatabaseServer, conn: Any, database: str
) -> tuple[list[Change], list[Change]]:
    """Snapshot ``database.t``, then copy it to ``database.c``: (reads, the copy's inserts)."""
    reads: list[Change] = []
    copied: list[Change] = []
    config = _config(srv, snapshot=True, snapshot_tables=(f"{database}.t",))
    async with asyncio.timeout(120), rc.connect(config) as stream:
        with conn.cursor() as cur:  # the oracle's session: permissive sql_mode, UTC
            cur.execute("SET SESSION binlog_row_image = 'FULL'")
            cur.execute(f"CREATE TABLE {database}.c LIKE {database}.t")
            cur.execute(f"INSERT INTO {database}.c SELECT * FROM {database}.t")
            cur.execute(f"INSERT INTO {database}.m VALUES (0)")
        async for change in stream.changes():
            if change.schema != database:
                continue
            if change.op == "read":
                reads.append(change)
            elif change.table == "c":
                copied.append(change)
            elif change.table == "m" and change.after == {"k": 0}:
                break
    return reads, copied


@pytest.mark.parametrize("name", list(SERVERS))
def test_snapshot_reads_equal_decoded_rows(
    mariadb_primary_factory: PrimaryFactory, name: str
) -> None:
    srv = _server(mariadb_primary_factory, name)
    failures: list[str] = []
    rows = values = 0
    for seed in SERVERS[name][1]:
        conn = oracle.connect(srv.host, srv.port, srv.user, srv.password)
        try:
            wl = run_workload(srv, conn, seed)
            reads, copied = loops.run(_read_then_copy(srv, conn, wl.database))
        finally:
            conn.close()
            srv.sql(f"SET GLOBAL binlog_row_metadata = '{srv.variant.row_metadata}'")
        live = srv.sql(f"SELECT COUNT(*) FROM {wl.database}.t")[0][0]
        assert len(reads) == live, f"seed {seed}: {len(reads)} reads of {live} rows"
        assert all(c.before is None and c.after is not None for c in reads)
        by_id = {c.after["id"]: c.after for c in copied if c.after is not None}
        assert len(by_id) == live, f"seed {seed}: {len(by_id)} copied rows of {live}"
        for read in reads:
            assert read.after is not None and read.table == "t" and read.primary_key == ("id",)
            decoded = by_id[read.after["id"]]
            for column, value in read.after.items():
                values += 1
                if decoded[column] != value or type(decoded[column]) is not type(value):
                    failures.append(
                        f"seed {seed} ({wl.describe().splitlines()[0]}) id={read.after['id']} "
                        f"{column}: read {value!r:.200} decoded {decoded[column]!r:.200}"
                    )
            rows += 1
    print(f"{name}: {rows} rows, {values} values read equal to decoded")
    assert rows > 0
    assert not failures, "\n".join(failures[:40])


# -- the seam --------------------------------------------------------------------------------

_DDL = [
    # A table the snapshot is not asked for (a resumed one must not read it either).
    "CREATE DATABASE IF NOT EXISTS snap_extra",
    "CREATE TABLE IF NOT EXISTS snap_extra.nokey (a INT)",
    "INSERT INTO snap_extra.nokey VALUES (1), (1)",
    "DROP DATABASE IF EXISTS snap",
    "CREATE DATABASE snap CHARACTER SET utf8mb4",
    "CREATE TABLE snap.t (id INT PRIMARY KEY, v VARCHAR(40), n BIGINT, "
    "d DATETIME(6), x DECIMAL(12,3)) ENGINE=InnoDB",
    "CREATE TABLE snap.u (k BIGINT UNSIGNED PRIMARY KEY, w VARCHAR(20)) ENGINE=InnoDB",
    "CREATE TABLE snap.done (k INT PRIMARY KEY) ENGINE=InnoDB",
]
_TABLES = ("snap.t", "snap.u")
_ROWS = 3000


def _seed_rows(srv: DatabaseServer) -> None:
    srv.sql_many(_DDL)
    values = ", ".join(
        f"({i}, 'v{i}', {i * 7}, '2024-01-01 00:00:00.{i % 1000:06d}', {i}.5)"
        for i in range(1, _ROWS + 1)
    )
    srv.sql(f"INSERT INTO snap.t VALUES {values}")
    srv.sql("INSERT INTO snap.u VALUES " + ", ".join(f"({k}, 'w{k}')" for k in range(1, 801)))


def _writer(srv: DatabaseServer, stop: threading.Event, seed: int, stats: Counter[str]) -> None:
    """Random transactions on both tables until stopped: every kind of row change."""
    r = random.Random(seed)
    conn = pymysql.connect(
        host=srv.host, port=srv.port, user=srv.user, password=srv.password, autocommit=True
    )
    next_id = _ROWS + 1
    try:
        with conn.cursor() as cur:
            while not stop.is_set():
                cur.execute("BEGIN")
                for _ in range(r.randint(1, 4)):
                    op = r.choice(["insert", "update", "update", "delete", "pk", "u"])
                    target = r.randint(1, next_id)
                    if op == "insert":
                        cur.execute(
                            "INSERT INTO snap.t VALUES (%s, %s, %s, NOW(6), %s)",
                            (next_id, f"i{next_id}", r.randint(-(2**40), 2**40), "1.25"),
                        )
                        next_id += 1
                    elif op == "update":
                        cur.execute(
                            "UPDATE snap.t SET v = %s, n = n + 1 WHERE id = %s",
                            (f"u{r.random():.6f}", target),
                        )
                    elif op == "delete":
                        cur.execute("DELETE FROM snap.t WHERE id = %s", (target,))
                    elif op == "pk":
                        cur.execute(
                            "UPDATE IGNORE snap.t SET id = %s WHERE id = %s", (next_id, target)
                        )
                        next_id += 1
                    else:
                        cur.execute(
                            "INSERT INTO snap.u VALUES (%s, 'n') ON DUPLICATE KEY UPDATE w = %s",
                            (r.randint(1, 1200), f"x{r.randint(0, 99)}"),
                        )
                    stats[op] += 1
                cur.execute("COMMIT")
                stats["transactions"] += 1
                time.sleep(0.002)
    finally:
        conn.close()


class _Mirror:
    """Applies reads and changes to per-table rows; records what would be a loss or a repeat."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {t: {} for t in _TABLES}
        self.problems: list[str] = []
        self.seen: Counter[tuple[Any, ...]] = Counter()
        self.counts: Counter[str] = Counter()

    def copy(self) -> _Mirror:
        other = _Mirror()
        other.rows = {t: dict(rows) for t, rows in self.rows.items()}
        other.problems = list(self.problems)
        other.seen = Counter(self.seen)
        other.counts = Counter(self.counts)
        return other

    def apply(self, change: Change) -> None:
        rows = self.rows[f"{change.schema}.{change.table}"]
        key_columns = change.primary_key
        before = change.before
        after = change.after
        if before is not None and after is not None:
            after = {**before, **after}  # a minimal after-image holds what changed
        old = tuple(before[k] for k in key_columns) if before is not None else None
        new = tuple(after[k] for k in key_columns) if after is not None else None
        self.counts[change.op] += 1
        if change.op != "read":
            ident = (change.gtid or change.position, change.table, change.op, old, new)
            self.seen[ident] += 1
            if self.seen[ident] > 1:
                self.problems.append(f"delivered twice: {ident}")
        if change.op in ("read", "insert"):
            if new in rows:
                self.problems.append(f"{change.op} of a key the mirror has: {change.table} {new}")
        elif old not in rows:
            self.problems.append(f"{change.op} of a key the mirror lacks: {change.table} {old}")
        if old is not None:
            rows.pop(old, None)
        if new is not None and after is not None:
            rows[new] = dict(after)


def _select_all(srv: DatabaseServer) -> dict[str, dict[tuple[Any, ...], dict[str, Any]]]:
    out: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    conn = pymysql.connect(
        host=srv.host, port=srv.port, user=srv.user, password=srv.password, autocommit=True
    )
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            for table, key in (("snap.t", "id"), ("snap.u", "k")):
                cur.execute(f"SELECT * FROM {table}")
                out[table] = {(row[key],): dict(row) for row in cur.fetchall()}
    finally:
        conn.close()
    return out


async def _consume(
    config: rc.ReplicaConfig,
    mirror: _Mirror,
    crash_after: int | None,
    on_snapshot_over: threading.Event,
) -> tuple[_Mirror, SnapshotState | None]:
    """Apply changes until the ``snap.done`` marker; with ``crash_after``: stop after that
    many items past the last checkpoint taken once half of them were applied, returning
    the checkpoint and the mirror as it was then (what a crashed consumer has)."""
    saved: tuple[_Mirror, SnapshotState] | None = None
    applied = 0
    async with asyncio.timeout(240), rc.connect(config) as stream:
        async for change in stream.changes():
            if change.op == "read" and f"{change.schema}.{change.table}" not in _TABLES:
                raise AssertionError(f"read of {change.schema}.{change.table}, not snapshotted")
            if change.schema != "snap":
                continue
            if change.table == "done":
                return mirror, None
            mirror.apply(change)
            applied += 1
            state = stream.snapshot_state
            if state is None:
                on_snapshot_over.set()
            if change.op == "read" and applied % 97 == 0:
                await asyncio.sleep(0.01)  # a slow consumer: the writers overlap the reads
            if crash_after is not None and state is not None:
                if saved is None and applied >= crash_after // 2 and change.op == "read":
                    saved = (mirror.copy(), SnapshotState.from_json(state.to_json()))
                elif saved is not None and applied >= crash_after:
                    return saved
    raise AssertionError("the stream ended before the marker")


@pytest.mark.parametrize("mode", ["consistent", "chunked"])
@pytest.mark.parametrize("name", list(SERVERS))
def test_snapshot_seam_under_writers_with_crash(
    mariadb_primary_factory: PrimaryFactory, name: str, mode: str
) -> None:
    srv = _server(mariadb_primary_factory, name)
    _seed_rows(srv)
    stop = threading.Event()
    over = threading.Event()
    stats: Counter[str] = Counter()
    writer = threading.Thread(target=_writer, args=(srv, stop, len(name) + len(mode), stats))
    writer.start()
    try:
        first = _config(srv, snapshot=mode, snapshot_tables=_TABLES, snapshot_chunk_rows=150)
        mirror, state = loops.run(_consume(first, _Mirror(), _ROWS // 2, over))
        assert state is not None and state.reading is not None, "the crash came after the snapshot"
        crashed_at = dict(mirror.counts)
        resumed = _config(srv, snapshot=state, snapshot_chunk_rows=150)

        async def finish() -> _Mirror:
            task = asyncio.create_task(_consume(resumed, mirror, None, over))
            # Writers go on until the snapshot is over and a while after; then the marker.
            while not over.is_set() and not task.done():
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            stop.set()
            await asyncio.to_thread(writer.join)
            srv.sql("INSERT INTO snap.done VALUES (1)")
            return (await task)[0]

        final = loops.run(finish())
    finally:
        stop.set()
        writer.join()
    want = _select_all(srv)
    print(
        f"{name} {mode}: writers {dict(stats)}; at the crash {crashed_at}; "
        f"in all {dict(final.counts)}; rows at the end "
        + ", ".join(f"{t} {len(r)}" for t, r in want.items())
    )
    assert stats["transactions"] > 20 and stats["pk"] > 0
    assert not final.problems, "\n".join(final.problems[:20])
    for table in _TABLES:
        assert final.rows[table] == want[table], _diff(final.rows[table], want[table])


def _diff(got: dict[Any, Any], want: dict[Any, Any]) -> str:
    missing = sorted(set(want) - set(got))[:10]
    extra = sorted(set(got) - set(want))[:10]
    wrong = [(k, got[k], want[k]) for k in sorted(set(got) & set(want)) if got[k] != want[k]]
    return f"missing {missing}; extra {extra}; different {wrong[:5]}"


# -- clear errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SERVERS))
def test_snapshot_refuses_what_it_cannot_do(
    mariadb_primary_factory: PrimaryFactory, name: str
) -> None:
    srv = _server(mariadb_primary_factory, name)
    srv.sql_many(
        [
            "DROP DATABASE IF EXISTS snap_err",
            "CREATE DATABASE snap_err",
            "CREATE TABLE snap_err.nokey (a INT, b VARCHAR(10))",
            "INSERT INTO snap_err.nokey VALUES (1, 'x'), (1, 'x'), (2, NULL)",
        ]
    )

    async def first_changes(config: rc.ReplicaConfig) -> list[Change]:
        async with asyncio.timeout(60), rc.connect(config) as stream:
            out = []
            async for change in stream.changes():
                if change.schema == "snap_err":
                    out.append(change)
                if len(out) == 3:
                    return out
        return out

    nokey, absent = "snap_err.nokey", "snap_err.absent"
    with pytest.raises(rc.SnapshotError, match=r"no primary key.*snapshot='consistent'"):
        loops.run(first_changes(_config(srv, snapshot="chunked", snapshot_tables=nokey)))
    with pytest.raises(rc.SnapshotError, match=r"not found: snap_err\.absent"):
        loops.run(first_changes(_config(srv, snapshot=True, snapshot_tables=absent)))
    # Consistent mode reads a table without a key whole, duplicates included.
    reads = loops.run(first_changes(_config(srv, snapshot=True, snapshot_tables=nokey)))
    assert sorted((c.op, c.after["a"], c.after["b"]) for c in reads if c.after) == [
        ("read", 1, "x"),
        ("read", 1, "x"),
        ("read", 2, None),
    ]
    if srv.variant.flavor == "mariadb":
        srv.sql("SET GLOBAL binlog_row_metadata = 'NO_LOG'")
        try:
            # NO_LOG without a schema history: streamed values could not equal the reads
            with pytest.raises(rc.SnapshotError, match="binlog_row_metadata=NO_LOG"):
                loops.run(first_changes(_config(srv, snapshot=True, schema_history="off")))
            # with one (the default) the snapshot is taken
            taken = loops.run(first_changes(_config(srv, snapshot=True, snapshot_tables=nokey)))
            assert sorted((c.after["a"], c.after["b"]) for c in taken if c.after) == [
                (1, "x"),
                (1, "x"),
                (2, None),
            ]
        finally:
            srv.sql(f"SET GLOBAL binlog_row_metadata = '{srv.variant.row_metadata}'")


# -- DDL during the snapshot -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["consistent", "chunked"])
@pytest.mark.parametrize("name", list(SERVERS))
def test_snapshot_reads_a_table_again_after_its_ddl(
    mariadb_primary_factory: PrimaryFactory, name: str, mode: str
) -> None:
    """An ALTER of a table not yet read (consistent) or between chunks (chunked): the
    table is read again at a new point, all of it in the new layout; never a mix."""
    srv = _server(mariadb_primary_factory, name)
    srv.sql_many(
        [
            "DROP DATABASE IF EXISTS snap_ddl",
            "CREATE DATABASE snap_ddl",
            "CREATE TABLE snap_ddl.a (id INT PRIMARY KEY, v INT)",
            "CREATE TABLE snap_ddl.b (id INT PRIMARY KEY, v INT)",
            "CREATE TABLE snap_ddl.done (k INT PRIMARY KEY)",
            f"INSERT INTO snap_ddl.a SELECT seq, seq FROM {_numbers(srv, 600)}",
            "INSERT INTO snap_ddl.b SELECT id, -id FROM snap_ddl.a",
        ]
    )
    altered = "b" if mode == "consistent" else "a"

    async def run() -> tuple[dict[str, dict[int, dict[str, Any]]], list[tuple[Any, ...]]]:
        rows: dict[str, dict[int, dict[str, Any]]] = {"a": {}, "b": {}}
        reads: list[tuple[Any, ...]] = []
        config = _config(
            srv,
            snapshot=mode,
            snapshot_tables=("snap_ddl.a", "snap_ddl.b"),
            snapshot_chunk_rows=100,
        )
        async with asyncio.timeout(120), rc.connect(config) as stream:
            marker = asyncio.create_task(marker_after_the_snapshot(stream))
            async for change in stream.changes():
                if change.schema != "snap_ddl":
                    continue
                if change.table == "done":
                    await marker
                    return rows, reads
                if change.op == "read":
                    assert change.after is not None
                    reads.append(
                        (change.table, change.after["id"], change.position, "z" in change.after)
                    )
                    if len(reads) == 150:
                        await asyncio.to_thread(
                            srv.sql, f"ALTER TABLE snap_ddl.{altered} ADD COLUMN z INT DEFAULT 7"
                        )
                if change.op == "delete":
                    assert change.before is not None
                    rows[change.table].pop(change.before["id"])
                else:
                    assert change.after is not None
                    rows[change.table][change.after["id"]] = dict(change.after)
        raise AssertionError("the stream ended before the marker")

    async def marker_after_the_snapshot(stream: rc.BinlogStream) -> None:
        while stream.snapshot_state is not None:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(srv.sql, "INSERT INTO snap_ddl.done VALUES (1)")

    rows, reads = loops.run(run())
    counts = Counter(r[0] for r in reads)
    print(f"{name} {mode}: reads per table {dict(counts)}")
    again = [r for r in reads if r[0] == altered][-600:]  # the last read of the altered table
    assert sorted(r[1] for r in again) == list(range(1, 601))
    assert all(r[3] for r in again), "rows of the old layout in the last read"
    if mode == "chunked":
        assert counts[altered] > 600, "the altered table was not read again"
    else:
        # Not read yet when altered: read in a new transaction, at a later point.
        points = {t: {r[2] for r in reads if r[0] == t} for t in ("a", "b")}
        assert len(points["a"]) == len(points["b"]) == 1 and points["a"] != points["b"]
    assert all(set(r) == {"id", "v", "z"} and r["z"] == 7 for r in rows[altered].values())
    for table in ("a", "b"):
        want = {int(r[0]): r for r in srv.sql(f"SELECT * FROM snap_ddl.{table}")}
        assert sorted(rows[table]) == sorted(want)
        assert all(tuple(rows[table][k].values()) == want[k] for k in want)


def _numbers(srv: DatabaseServer, n: int, schema: str = "snap_ddl") -> str:
    """A FROM clause of the numbers 1..n as ``seq``, on either flavour."""
    if srv.variant.flavor == "mariadb":
        return f"{schema}.seq_1_to_{n}"
    return (
        "(WITH RECURSIVE s(seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM s "
        f"WHERE seq < {n}) SELECT seq FROM s) AS numbers"
    )


# -- one table on demand ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SERVERS))
def test_snapshot_table_on_demand_while_streaming(
    mariadb_primary_factory: PrimaryFactory, name: str
) -> None:
    """``await stream.snapshot_table(...)`` in the middle of a stream, with writers on
    that table: its rows arrive as reads merged with the stream, nothing twice."""
    srv = _server(mariadb_primary_factory, name)
    _seed_rows(srv)
    start = (
        srv.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]
        if srv.variant.flavor == "mariadb"
        else None
    )
    stop = threading.Event()
    stats: Counter[str] = Counter()
    writer = threading.Thread(target=_writer, args=(srv, stop, 7, stats))

    async def run() -> _Mirror:
        mirror = _Mirror()
        config = _config(
            srv,
            start=rc.Gtid(start) if start is not None else "now",
            tables="snap.*",
            snapshot_chunk_rows=200,
        )
        marker: asyncio.Task[None] | None = None
        async with asyncio.timeout(120), rc.connect(config) as stream:
            writer.start()
            asked = False
            async for change in stream.changes():
                if change.table == "done":
                    assert marker is not None
                    await marker
                    return mirror
                if change.table == "u":
                    continue  # not snapshotted: its rows before the stream are unknown
                if not asked:
                    # The first change of snap.t: its table is not in the mirror yet.
                    assert change.op != "read"
                    await stream.snapshot_table("snap.t")
                    asked = True
                    continue
                mirror.apply(change)
                if change.op == "read" and mirror.counts["read"] % 10 == 0:
                    await asyncio.sleep(0.01)  # a slow consumer: the writers overlap the reads
                if mirror.counts["read"] >= 1500 and not stop.is_set():
                    stop.set()  # (writers ran for half of the table's reads)
                    marker = asyncio.create_task(marker_after_the_snapshot(stream))
        raise AssertionError("the stream ended before the marker")

    async def marker_after_the_snapshot(stream: rc.BinlogStream) -> None:
        await asyncio.to_thread(writer.join)
        while stream.snapshot_state is not None:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(srv.sql, "INSERT INTO snap.done VALUES (1)")

    try:
        mirror = loops.run(run())
    finally:
        stop.set()
        if writer.is_alive():
            writer.join()
    want = _select_all(srv)["snap.t"]
    print(f"{name}: writers {dict(stats)}; delivered {dict(mirror.counts)}")
    assert not mirror.problems, "\n".join(mirror.problems[:20])
    assert mirror.counts["read"] >= 1500 and mirror.counts["update"] > 0
    assert mirror.rows["snap.t"] == want, _diff(mirror.rows["snap.t"], want)


@pytest.mark.parametrize("name", list(SERVERS))
def test_truncate_of_a_half_read_table_raises(
    mariadb_primary_factory: PrimaryFactory, name: str
) -> None:
    """Chunked mode: a TRUNCATE between two chunks of a table leaves the rows read
    before it with no change to remove them: a typed error, not a silent copy."""
    srv = _server(mariadb_primary_factory, name)
    srv.sql_many(
        [
            "DROP DATABASE IF EXISTS snap_tr",
            "CREATE DATABASE snap_tr",
            "CREATE TABLE snap_tr.a (id INT PRIMARY KEY, v INT)",
            f"INSERT INTO snap_tr.a SELECT seq, seq FROM {_numbers(srv, 500, 'snap_tr')}",
        ]
    )

    async def run() -> int:
        reads = 0
        config = _config(
            srv, snapshot="chunked", snapshot_tables=("snap_tr.a",), snapshot_chunk_rows=100
        )
        async with asyncio.timeout(60), rc.connect(config) as stream:
            async for change in stream.changes():
                reads += change.op == "read"
                if reads == 150:
                    await asyncio.to_thread(srv.sql, "TRUNCATE TABLE snap_tr.a")
        return reads

    with pytest.raises(rc.SnapshotError, match=r"TRUNCATE of snap_tr\.a while its snapshot"):
        loops.run(run())


@pytest.mark.parametrize("name", ["mariadb-10.11", "mysql-9.7"])
def test_a_lost_snapshot_connection_is_a_replica_error(
    mariadb_primary_factory: PrimaryFactory, name: str
) -> None:
    """The snapshot's own connection killed mid-read: a ReplicaError, never a driver's
    exception; a missing privilege: the server's refusal, a ServerError."""
    srv = _server(mariadb_primary_factory, name)
    _seed_rows(srv)

    async def run() -> None:
        config = _config(srv, snapshot="chunked", snapshot_tables=_TABLES, snapshot_chunk_rows=100)
        async with asyncio.timeout(60), rc.connect(config) as stream:
            reads = 0
            async for change in stream.changes():
                reads += change.op == "read"
                if reads == 150:
                    for row in srv.sql("SHOW PROCESSLIST"):
                        if row[1] == SNAP_USER and row[4] != "Binlog Dump":
                            srv.sql(f"KILL {int(row[0])}")

    # (ConnectionLostError when the kill lands between statements; a query it interrupts
    # may first get the server's own "killed" error, a ServerError.)
    with pytest.raises((rc.ConnectionLostError, rc.ServerError)):
        loops.run(run())
    if srv.variant.flavor == "mysql":
        # Without RELOAD the read point cannot be taken: the server's refusal, typed.
        srv.create_user(
            SNAP_USER, SNAP_PASSWORD, grants="REPLICATION SLAVE, REPLICATION CLIENT, SELECT"
        )
        try:
            with pytest.raises(rc.ServerError, match="RELOAD"):
                loops.run(run())
        finally:
            _server(mariadb_primary_factory, name)


@pytest.mark.parametrize("mode", ["consistent", "chunked"])
def test_snapshot_progress_counts_the_rows_read(
    mariadb_primary_factory: PrimaryFactory, mode: str
) -> None:
    """stream.snapshot_progress: per table the rows read (what the consumer was handed,
    to within a batch) and the server's estimate; metrics.snapshot_rows the sum."""
    srv = _server(mariadb_primary_factory, "mariadb-10.11")
    srv.sql_many(
        [
            "DROP DATABASE IF EXISTS snap_pg",
            "CREATE DATABASE snap_pg",
            "CREATE TABLE snap_pg.a (id INT PRIMARY KEY, v INT)",
            "CREATE TABLE snap_pg.b (id INT PRIMARY KEY, v INT) ENGINE=MyISAM",
            f"INSERT INTO snap_pg.a SELECT seq, seq FROM {_numbers(srv, 2500, 'snap_pg')}",
            f"INSERT INTO snap_pg.b SELECT seq, seq FROM {_numbers(srv, 700, 'snap_pg')}",
        ]
    )
    seen: list[list[rc.SnapshotProgress]] = []

    async def run() -> tuple[Counter[str], int, list[rc.SnapshotProgress] | None]:
        reads: Counter[str] = Counter()
        config = _config(
            srv,
            snapshot=mode,
            snapshot_tables=("snap_pg.a", "snap_pg.b"),
            snapshot_chunk_rows=1000,
            blocking=False,
        )
        async with asyncio.timeout(60), rc.connect(config) as stream:
            async for change in stream.changes():
                progress = stream.snapshot_progress
                if change.op == "read":
                    reads[change.table] += 1
                    assert progress is not None
                    seen.append(progress)
                    by_table = {p.table: p for p in progress}
                    read = by_table[f"snap_pg.{change.table}"].rows_read
                    # counted when a batch is handed on: at most one batch ahead
                    assert reads[change.table] <= read < reads[change.table] + 1000
                elif stream.snapshot_state is None:
                    break
            return reads, stream.metrics.snapshot_rows, stream.snapshot_progress

    reads, metric, after = loops.run(run())
    assert reads == {"a": 2500, "b": 700} and metric == 3200
    assert after is None  # the snapshot is over
    last = {p.table: p for p in seen[-1]}
    assert last["snap_pg.b"].rows_estimated == 700  # MyISAM counts exactly
    assert last["snap_pg.a"].rows_estimated is not None  # InnoDB estimates
    assert last["snap_pg.a"].done and last["snap_pg.a"].fraction == 1.0
    assert [p.table for p in seen[0]] == ["snap_pg.a", "snap_pg.b"]
