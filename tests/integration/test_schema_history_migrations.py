"""Online schema migrations (gh-ost, pt-online-schema-change) under a stream of ``db.t``.

Both tools build the new table beside the old one, copy the rows in chunks
while the application keeps writing, and swap the two with one ``RENAME
TABLE``; the binlog holds the new table's DDL and copies under its temporary
name, then the new columns under the old name. A stream with ``tables="db.t"``
sees only ``t``: every change of it, before, during and after the swap, must
come under the names the table had when the row was written, with the values
``SELECT`` gives; on each server in its own defaults (no column names in the
binlog: the schema history says them) and in the recommended settings.

- gh-ost: ``CREATE TABLE _t_gho LIKE t``, ``ALTER TABLE _t_gho``, chunks of
  ``INSERT IGNORE INTO _t_gho SELECT ... FROM t``; the writes to ``t`` meanwhile
  applied to ``_t_gho`` (gh-ost reads them from the binlog: ``REPLACE INTO`` and
  ``DELETE``); ``RENAME TABLE t TO _t_del, _t_gho TO t``; ``DROP TABLE _t_del``.
- pt-osc: ``CREATE TABLE _t_new LIKE t``, ``ALTER TABLE _t_new``, triggers on
  ``t`` that copy every INSERT, UPDATE and DELETE to ``_t_new``, chunks of
  ``INSERT LOW_PRIORITY IGNORE INTO _t_new SELECT ... LOCK IN SHARE MODE``,
  ``RENAME TABLE t TO _t_old, _t_new TO t``, ``DROP TRIGGER`` x3, ``DROP TABLE
  _t_old``.

Two consumers: a stream started before the migration, reading while it runs,
and one started after it at the position before the table was created (the
history read then, the binlog between scanned for DDL: the definition ``t``
had before its swap is known only from there).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pymysql
import pytest

import replica_client as rc
from replica_client.changes import Change
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import DatabaseServer, ServerVariant
from tests import loops
from tests.gen_oracle.schema import quote
from tests.integration._stream_support import config_for, repl_user

pytestmark = pytest.mark.integration

VARIANTS = (
    ServerVariant.server_defaults(),
    ServerVariant(),
    ServerVariant.server_defaults("mariadb", "11.8"),
    ServerVariant(flavor="mariadb", version="11.8"),
    ServerVariant.server_defaults("mysql", "9.7"),
    ServerVariant(flavor="mysql", version="9.7"),
)
TOOLS = ("gh-ost", "pt-osc")

_OLD = (
    "id INT NOT NULL PRIMARY KEY, a INT, s VARCHAR(20) CHARACTER SET latin1, "
    "e ENUM('x','y','z') CHARACTER SET utf8mb4, u INT UNSIGNED, d DECIMAL(10,2)"
)
#: the migration: a column added in the middle, a type widened, a column renamed to
#: another character set, one dropped, ENUM labels added
_ALTER = (
    "ADD COLUMN n VARCHAR(8) CHARACTER SET utf8mb4 AFTER id, MODIFY COLUMN a BIGINT, "
    "CHANGE COLUMN s s2 VARCHAR(30) CHARACTER SET utf8mb4 AFTER u, DROP COLUMN d, "
    "MODIFY COLUMN e ENUM('x','y','z','w') CHARACTER SET utf8mb4"
)
#: the new table's columns copied from the old one's
_COPIED = (("id", "id"), ("a", "a"), ("s2", "s"), ("e", "e"), ("u", "u"))
_END = 999_999
_runs = itertools.count(1)


@dataclass
class _Expected:
    op: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    statement: str


@dataclass
class _Workload:
    db: str
    expected: list[_Expected] = field(default_factory=list)
    ddl: list[str] = field(default_factory=list)


@pytest.fixture(params=VARIANTS, ids=[v.label for v in VARIANTS])
def server(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> Iterator[DatabaseServer]:
    srv = mariadb_primary_factory(request.param)
    repl_user(srv)
    yield srv


class _Writer:
    """The application and the migration tool: one session logging rows."""

    def __init__(self, srv: DatabaseServer, wl: _Workload, tool: str) -> None:
        self.conn = pymysql.connect(
            host=srv.host,
            port=srv.port,
            user=srv.user,
            password=srv.password,
            charset="utf8mb4",
            autocommit=True,
        )
        self.cur = self.conn.cursor()
        self.cur.execute("SET SESSION binlog_format = 'ROW'")
        self.cur.execute("SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'")
        self.wl = wl
        self.tool = tool
        self.new = "_t_gho" if tool == "gh-ost" else "_t_new"
        self.t = f"{wl.db}.t"
        self.r = random.Random(f"{wl.db}:{tool}")
        self.ids: set[int] = set()
        self.next_id = 1
        self.migrating = False  # gh-ost applies t's writes to its table

    def rows(self, ids: list[int]) -> dict[int, dict[str, Any]]:
        if not ids:
            return {}
        self.cur.execute(f"SELECT * FROM {self.t} WHERE id IN ({','.join(map(str, ids))})")
        names = [d[0] for d in self.cur.description]
        return {int(row[0]): dict(zip(names, row, strict=True)) for row in self.cur.fetchall()}

    def ddl(self, sql: str) -> None:
        self.cur.execute(sql)
        self.wl.ddl.append(sql)

    def values(self, i: int) -> dict[str, str]:
        """SQL literals for each column of either table."""
        r = self.r
        pick = r.choice(["", "é", "Ñandú", "x" * 20, f"row {i}", None])
        text = "NULL" if pick is None else quote(pick)
        return {
            "a": str(r.choice([-(2**31), -1, 0, 7, 2**31 - 1, r.randint(-1000, 1000)])),
            "s": text,
            "s2": text,
            "e": quote(r.choice(["x", "y", "z"])),
            "u": str(r.choice([0, 4_000_000_000, 2**32 - 1, r.randint(0, 99)])),
            "d": r.choice(["-99999999.99", "0.01", "12.5", "NULL"]),
            "n": quote(r.choice(["", "new", "ж🙂"])),
        }

    def write(self) -> None:
        """One statement of the application on ``t``, its images read around it."""
        r = self.r
        op = r.choice(["insert", "insert", "update", "update", "delete"])
        if op != "insert" and not self.ids:
            op = "insert"
        self.cur.execute(f"SELECT * FROM {self.t} LIMIT 0")
        columns = [d[0] for d in self.cur.description]
        if op == "insert":
            ids = list(range(self.next_id, self.next_id + r.randint(1, 3)))
            self.next_id = ids[-1] + 1
            rows = []
            for i in ids:
                v = self.values(i)
                rows.append("(" + ", ".join(str(i) if c == "id" else v[c] for c in columns) + ")")
            sql = f"INSERT INTO {self.t} ({', '.join(columns)}) VALUES {', '.join(rows)}"
        else:
            ids = sorted(r.sample(sorted(self.ids), min(len(self.ids), r.randint(1, 3))))
            where = f"WHERE id IN ({','.join(map(str, ids))}) ORDER BY id"
            if op == "update":
                v = self.values(ids[0])
                changed = r.sample([c for c in columns if c != "id"], r.randint(1, 2))
                sets = ", ".join(f"{c} = {v[c]}" for c in changed)
                sql = f"UPDATE {self.t} SET {sets} {where}"
            else:
                sql = f"DELETE FROM {self.t} {where}"
        before = self.rows(ids) if op != "insert" else {}
        self.cur.execute(sql)
        after = self.rows(ids) if op != "delete" else {}
        for i in ids:
            if op == "update" and before[i] == after[i]:
                continue  # an unchanged row is not logged
            self.wl.expected.append(_Expected(op, before.get(i), after.get(i), sql))
        if op == "delete":
            self.ids.difference_update(ids)
        else:
            self.ids.update(ids)
        if self.migrating and self.tool == "gh-ost":
            self.apply(ids, op)

    def apply(self, ids: list[int], op: str) -> None:
        """gh-ost's applier: a write of ``t`` done again on ``_t_gho``."""
        new = f"{self.wl.db}.{self.new}"
        listed = ",".join(map(str, ids))
        if op == "delete":
            self.cur.execute(f"DELETE FROM {new} WHERE id IN ({listed})")
            return
        into = ", ".join(n for n, _ in _COPIED)
        source = ", ".join(o for _, o in _COPIED)
        self.cur.execute(
            f"REPLACE INTO {new} ({into}) SELECT {source} FROM {self.t} WHERE id IN ({listed})"
        )

    def copy(self, lo: int, hi: int) -> None:
        new = f"{self.wl.db}.{self.new}"
        into = ", ".join(n for n, _ in _COPIED)
        source = ", ".join(o for _, o in _COPIED)
        if self.tool == "gh-ost":
            sql = (
                f"INSERT IGNORE INTO {new} ({into}) SELECT {source} FROM {self.t} "
                f"FORCE INDEX (PRIMARY) WHERE id BETWEEN {lo} AND {hi} LOCK IN SHARE MODE"
            )
        else:
            sql = (
                f"INSERT LOW_PRIORITY IGNORE INTO {new} ({into}) SELECT {source} "
                f"FROM {self.t} FORCE INDEX (PRIMARY) WHERE id >= {lo} AND id <= {hi} "
                "LOCK IN SHARE MODE"
            )
        self.cur.execute(sql)

    def triggers(self) -> None:
        db, t, new = self.wl.db, self.t, f"{self.wl.db}.{self.new}"
        into = ", ".join(n for n, _ in _COPIED)
        values = ", ".join(f"NEW.{o}" for _, o in _COPIED)
        self.ddl(
            f"CREATE TRIGGER {db}.pt_osc_del AFTER DELETE ON {t} FOR EACH ROW "
            f"DELETE IGNORE FROM {new} WHERE {new}.id <=> OLD.id"
        )
        self.ddl(
            f"CREATE TRIGGER {db}.pt_osc_upd AFTER UPDATE ON {t} FOR EACH ROW BEGIN "
            f"DELETE IGNORE FROM {new} WHERE !(OLD.id <=> NEW.id) AND {new}.id <=> OLD.id; "
            f"REPLACE INTO {new} ({into}) VALUES ({values}); END"
        )
        self.ddl(
            f"CREATE TRIGGER {db}.pt_osc_ins AFTER INSERT ON {t} FOR EACH ROW "
            f"REPLACE INTO {new} ({into}) VALUES ({values})"
        )

    def run(self) -> None:
        db, r = self.wl.db, self.r
        try:
            for _ in range(6):
                self.write()
            new = f"{db}.{self.new}"
            self.ddl(f"CREATE TABLE {new} LIKE {self.t}")
            self.ddl(f"ALTER TABLE {new} {_ALTER}")
            if self.tool == "pt-osc":
                self.triggers()
            self.migrating = True
            last = self.next_id - 1
            lo = 1
            while lo <= last:
                hi = lo + r.randint(1, 4)
                self.copy(lo, hi)
                lo = hi + 1
                for _ in range(r.randint(0, 2)):
                    self.write()
            old = f"{db}._t_del" if self.tool == "gh-ost" else f"{db}._t_old"
            self.ddl(f"RENAME TABLE {self.t} TO {old}, {new} TO {self.t}")
            self.migrating = False
            if self.tool == "pt-osc":
                for name in ("del", "upd", "ins"):
                    self.ddl(f"DROP TRIGGER IF EXISTS {db}.pt_osc_{name}")
            self.ddl(f"DROP TABLE IF EXISTS {old}")
            for _ in range(6):
                self.write()
            self.cur.execute(f"INSERT INTO {self.t} (id) VALUES ({_END})")
        finally:
            self.conn.close()


async def _changes(stream: rc.BinlogStream) -> list[Change]:
    got: list[Change] = []
    async with asyncio.timeout(60):
        async for change in stream.changes():
            if change.after is not None and change.after.get("id") == _END:
                break
            got.append(change)
    return got


def _compare(name: str, got: list[Change], wl: _Workload) -> list[str]:
    problems = []
    if len(got) != len(wl.expected):
        problems.append(f"[{name}] {len(got)} changes of t, {len(wl.expected)} written")
    for i, (ch, exp) in enumerate(zip(got, wl.expected, strict=False)):
        have = (ch.table, ch.op, ch.before, ch.after)
        want = ("t", exp.op, exp.before, exp.after)
        orders = [list(image or ()) for image in (ch.before, ch.after, exp.before, exp.after)]
        if have != want or orders[:2] != orders[2:]:
            problems.append(
                f"[{name}] change {i}: decoded {have!r:.600}\n    != SELECT {want!r:.600}"
                f"\n    statement: {exp.statement}"
            )
    return problems


@pytest.mark.parametrize("tool", TOOLS)
def test_migration_keeps_names_and_values(server: DatabaseServer, tool: str) -> None:
    srv = server
    db = f"mig_{tool.replace('-', '_')}_{next(_runs)}"
    wl = _Workload(db)
    srv.sql(f"DROP DATABASE IF EXISTS {db}")
    srv.sql(f"CREATE DATABASE {db} CHARACTER SET latin1")
    # (the lagging stream starts before t is created: a definition of t before its
    # swap cannot be read from the server after it, the binlog says it)
    file, pos = srv.binlog_position()
    srv.sql(f"CREATE TABLE {db}.t ({_OLD})")
    table = f"{db}.t"

    async def live() -> list[Change]:
        async with rc.connect(config_for(srv, start="now", tables=table)) as stream:
            writer = _Writer(srv, wl, tool)
            got, _ = await asyncio.gather(_changes(stream), asyncio.to_thread(writer.run))
            return got

    async def lagging() -> list[Change]:
        start = rc.FilePos(file, pos)
        async with rc.connect(config_for(srv, start=start, tables=table)) as stream:
            return await _changes(stream)

    problems = _compare("live", loops.run(live()), wl)
    problems += _compare("lagging", loops.run(lagging()), wl)
    assert not problems, "\n".join(
        [f"{srv.variant.label} {tool}, the DDL:", *wl.ddl, *problems[:20]]
    )
