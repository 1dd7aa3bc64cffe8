"""Run one seed of the generated oracle on a live server and compare every decoded value.

The workload: a generated table (``schema.generate_table``) in a database of
its own, then seeded transactions of multi-row inserts, updates (primary-key
changes included), deletes and rollbacks, with ``ALTER TABLE`` between some of
them. Every transaction starts with an insert into a marker table, so the
decoded changes of each one are found again whatever the server did with the
others. Before a transaction the rows it will touch are read with ``SELECT``;
after it, the rows it wrote: those images, in the server's own text forms
(``CAST(... AS CHAR)``, raw bytes, ``+ 0e0`` for FLOAT), are what every decoded
image must equal. Values of a column come from a random stream of their own, so
the same seed with fewer columns writes the same values: that is how a failure
is shrunk to the smallest failing table.
"""

from __future__ import annotations

import json
import random
import re
import struct
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql

from replica_client.binlog.events import JSON_NULL
from replica_client.changes import Change
from replica_client.testing.server import DatabaseServer
from tests import oracle
from tests.gen_oracle.schema import GenColumn, GenTable, extra_column, generate_table

__all__ = ["Expected", "Outcome", "Workload", "compare", "run_workload", "tool_counts"]

ROW_IMAGES = ("FULL", "MINIMAL", "NOBLOB")


@dataclass
class Expected:
    """One row change the decoder must report, with the server's images of the row."""

    op: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    statement: str


@dataclass
class Transaction:
    number: int
    columns: tuple[GenColumn, ...]
    committed: bool
    changes: list[Expected] = field(default_factory=list)


@dataclass
class Workload:
    seed: int
    database: str
    table: GenTable
    row_image: str
    full_metadata: bool
    ddl: list[str] = field(default_factory=list)
    transactions: list[Transaction] = field(default_factory=list)

    @property
    def end_marker(self) -> int:
        return len(self.transactions) + 1

    def counts(self) -> dict[str, int]:
        out = {"insert": 0, "update": 0, "delete": 0}
        for tx in self.transactions:
            if tx.committed:
                for ch in tx.changes:
                    out[ch.op] += 1
        return out

    def describe(self) -> str:
        return (
            f"seed={self.seed} binlog_row_image={self.row_image} "
            f"binlog_row_metadata={'FULL' if self.full_metadata else 'MINIMAL'}\n"
            + "\n".join(d[:3000] for d in self.ddl)
        )


def _oracle_column(c: GenColumn) -> oracle.Column:
    return oracle.Column(c.name, c.ddl, c.kind, c.fsp)


def _select_expr(c: GenColumn, flavor: str, full: bool) -> str:
    n = f"`{c.name}`"
    if c.kind == "int" and "ZEROFILL" in c.ddl:
        return f"CAST({n} + 0 AS CHAR)"
    if c.kind == "json":
        return f"CAST({n} AS CHAR)" if flavor == "mysql" else n
    if c.kind == "text":
        return f"CONVERT({n} USING utf8mb4)"
    if c.kind == "vector":
        return f"HEX({n})"  # the float32 values exactly
    if c.kind in ("enum", "set") and not full:
        # the index / bitmask (a 64-member SET "+ 0" is signed on MariaDB 11.8, a double on MySQL)
        return f"CAST(CAST({n} AS UNSIGNED) AS CHAR)"
    return oracle._select_expr(_oracle_column(c), full)


def _images(
    cur: Any, wl: Workload, columns: Sequence[GenColumn], flavor: str, ids: Iterable[int]
) -> dict[int, dict[str, Any]]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    exprs = ", ".join(_select_expr(c, flavor, wl.full_metadata) for c in columns)
    cur.execute(
        f"SELECT id, {exprs} FROM {wl.database}.t WHERE id IN ({','.join(map(str, wanted))})"
    )
    out: dict[int, dict[str, Any]] = {}
    for row in cur.fetchall():
        out[int(row[0])] = {
            c.name: oracle.canonical_selected(_oracle_column(c), v, wl.full_metadata)
            for c, v in zip(columns, row[1:], strict=True)
        }
    return out


def _value(seed: int, where: str, c: GenColumn) -> str:
    return c.value(random.Random(f"{seed}:{where}:{c.name}"))


def run_workload(
    server: DatabaseServer,
    conn: pymysql.connections.Connection[Any],
    seed: int,
    *,
    only: frozenset[str] | None = None,
    transactions: int = 10,
    max_columns: int = 60,
) -> Workload:
    """Create the seed's table and run its transactions (the caller flushed the binlog)."""
    flavor, version = server.variant.flavor, server.variant.version or ""
    table = generate_table(seed, flavor, version, max_columns)
    if only is not None:
        table = GenTable(seed, tuple(c for c in table.columns if c.name in only))
    r = random.Random(seed * 31 + 7)
    wl = Workload(
        seed,
        f"gen_{seed}" + ("_s" if only is not None else ""),
        table,
        r.choice(ROW_IMAGES),
        r.random() < 0.6,
    )
    server.sql(f"SET GLOBAL binlog_row_metadata = '{'FULL' if wl.full_metadata else 'MINIMAL'}'")
    cur = conn.cursor()
    cur.execute(f"SET SESSION binlog_row_image = '{wl.row_image}'")
    cur.execute(f"DROP DATABASE IF EXISTS {wl.database}")
    cur.execute(f"CREATE DATABASE {wl.database} CHARACTER SET utf8mb4")
    cur.execute(f"CREATE TABLE {wl.database}.m (k INT PRIMARY KEY)")
    columns = list(table.columns)
    while True:
        ddl = GenTable(seed, tuple(columns)).ddl(f"{wl.database}.t")
        try:
            cur.execute(ddl)
            break
        except pymysql.err.OperationalError as exc:
            if exc.args[0] not in (1118, 1074, 1071):  # row size / column length
                raise
            widest = max(
                (c for c in columns if c.name not in ("id", "rev")),
                key=lambda c: c.row_bytes + (500 if c.blob else 0),
            )
            columns.remove(widest)
    wl.ddl.append(ddl)
    live: set[int] = set()
    next_id = 1
    added = 0
    for number in range(1, transactions + 1):
        if r.random() < 0.12 and number > 1:
            columns = _alter(cur, wl, columns, r, flavor, version, added)
            added += 1
        plan: list[tuple[str, list[int], list[int]]] = []  # (op, ids, new ids)
        touched: set[int] = set()
        for _ in range(r.randint(1, 5)):
            op = r.choice(["insert", "insert", "update", "update", "pk", "delete"])
            free = sorted(live - touched)
            if op == "insert" or not free:
                ids = list(range(next_id, next_id + r.randint(1, 5)))
                next_id += len(ids) + r.randint(0, 3)
                plan.append(("insert", ids, ids))
            elif op == "pk":
                old = r.choice(free)
                plan.append(("pk", [old], [next_id]))
                next_id += 1
            else:
                ids = sorted(r.sample(free, min(len(free), r.randint(1, 4))))
                plan.append((op, ids, ids))
            touched.update(plan[-1][1])
            touched.update(plan[-1][2])
        before = _images(
            cur, wl, columns, flavor, [i for op, ids, _ in plan for i in ids if op != "insert"]
        )
        tx = Transaction(number, tuple(columns), committed=r.random() >= 0.1)
        statements: list[tuple[str, str, list[int], list[int]]] = []
        for k, (op, ids, new) in enumerate(plan):
            statements.append(
                (op, _statement(wl, columns, seed, number, k, op, ids, new), ids, new)
            )
        cur.execute("BEGIN")
        try:
            cur.execute(f"INSERT INTO {wl.database}.m VALUES ({number})")
            for _, sql, _, _ in statements:
                cur.execute(sql)
        except pymysql.err.MySQLError:
            tx.committed = False
        cur.execute("COMMIT" if tx.committed else "ROLLBACK")
        wl.transactions.append(tx)
        if not tx.committed:
            continue
        written = [i for op, _, new in plan if op != "delete" for i in new]
        after = _images(cur, wl, columns, flavor, written)
        for op, sql, ids, new in statements:
            if op == "insert":
                tx.changes += [Expected("insert", None, after[i], sql) for i in ids]
                live.update(ids)
            elif op == "delete":
                tx.changes += [Expected("delete", before[i], None, sql) for i in ids]
                live.difference_update(ids)
            else:
                for old, now in zip(ids, new, strict=True):
                    tx.changes.append(Expected("update", before[old], after[now], sql))
                live.difference_update(ids)
                live.update(new)
    cur.execute(f"INSERT INTO {wl.database}.m VALUES ({wl.end_marker})")
    cur.close()
    return wl


def _statement(
    wl: Workload,
    columns: Sequence[GenColumn],
    seed: int,
    number: int,
    k: int,
    op: str,
    ids: list[int],
    new: list[int],
) -> str:
    t = f"{wl.database}.t"
    data = [c for c in columns if c.name not in ("id", "rev")]
    where = f"WHERE id IN ({','.join(map(str, ids))}) ORDER BY id"
    if op == "insert":
        names = ", ".join(f"`{c.name}`" for c in columns)
        rows = []
        for i in ids:
            values = []
            for c in columns:
                if c.name == "id":
                    values.append(str(i))
                elif c.name == "rev":
                    values.append("0")
                else:
                    values.append(_value(seed, f"{number}:{k}:{i}", c))
            rows.append("(" + ", ".join(values) + ")")
        return f"INSERT INTO {t} ({names}) VALUES " + ", ".join(rows)
    if op == "delete":
        return f"DELETE FROM {t} {where}"
    r = random.Random(f"{seed}:{number}:{k}:set")
    chosen = r.sample(data, min(len(data), r.randint(0, 4)))
    sets = ["rev = rev + 1"] + [f"`{c.name}` = {_value(seed, f'{number}:{k}', c)}" for c in chosen]
    if op == "pk":
        sets.append(f"id = {new[0]}")
    return f"UPDATE {t} SET {', '.join(sets)} {where}"


def _alter(
    cur: Any,
    wl: Workload,
    columns: list[GenColumn],
    r: random.Random,
    flavor: str,
    version: str,
    added: int,
) -> list[GenColumn]:
    data = [c for c in columns if c.name not in ("id", "rev")]
    t = f"{wl.database}.t"
    if data and r.random() < 0.4:
        gone = r.choice(data)
        sql = f"ALTER TABLE {t} DROP COLUMN `{gone.name}`"
        out = [c for c in columns if c is not gone]
    else:
        col = extra_column(wl.seed, added, flavor, version)
        col = col.renamed(f"a{added}")
        if not col.nullable and col.kind in ("geometry", "json"):
            col = GenColumn(
                col.name,
                col.ddl.replace(" NOT NULL", " NULL"),
                col.kind,
                col.gen,
                col.fsp,
                True,
                col.row_bytes,
                col.blob,
            )
        place = r.randint(0, len(columns))
        where = " FIRST" if place == 0 else f" AFTER `{columns[place - 1].name}`"
        sql = f"ALTER TABLE {t} ADD COLUMN `{col.name}` {col.ddl}{where}"
        out = [*columns[:place], col, *columns[place:]]
    try:
        cur.execute(sql)
    except pymysql.err.MySQLError:
        return columns  # e.g. the row would grow too large: the table stays as it was
    wl.ddl.append(sql)
    return out


# -- comparison ------------------------------------------------------------------------


@dataclass
class Outcome:
    compared: int = 0
    mismatches: list[str] = field(default_factory=list)
    failing_columns: set[str] = field(default_factory=set)


def _json_form(value: Any) -> Any:
    if value is JSON_NULL:
        return None
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {k: _json_form(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_form(v) for v in value]
    return value


def _canonical(c: GenColumn, value: Any, full: bool) -> Any:
    if c.kind == "json" and value is not None and not isinstance(value, str):
        return _json_form(value)  # MySQL binary JSON
    if c.kind == "vector" and value is not None:
        return struct.pack(f"<{len(value)}f", *value).hex().upper()
    return oracle.canonical_decoded(_oracle_column(c), value, full)


def _wanted(c: GenColumn, value: Any, flavor: str) -> Any:
    if c.kind == "json" and flavor == "mysql" and value is not None:
        return json.loads(value)
    return value


def _image(
    out: Outcome,
    wl: Workload,
    tx: Transaction,
    what: str,
    got: dict[str, Any],
    want: dict[str, Any],
    required: bool,
    flavor: str,
    statement: str,
) -> None:
    by_name = {c.name: c for c in tx.columns}
    named: dict[str, Any] = {}
    for key, value in got.items():
        positional = key.startswith("@") and not wl.full_metadata
        named[tx.columns[int(key[1:]) - 1].name if positional else key] = value
    if required:
        absent = set(by_name) - set(named)
        if wl.row_image == "NOBLOB":
            absent -= {c.name for c in tx.columns if c.blob}
        if absent:
            out.mismatches.append(f"tx {tx.number} {what}: columns missing: {sorted(absent)}")
    for name, value in named.items():
        c = by_name.get(name)
        if c is None:
            out.mismatches.append(f"tx {tx.number} {what}: unknown column {name!r}")
            continue
        out.compared += 1
        if name == "id":
            continue
        have = _canonical(c, value, wl.full_metadata)
        expect = _wanted(c, want[name], flavor)
        if have != expect:
            out.failing_columns.add(name)
            out.mismatches.append(
                f"tx {tx.number} {what} column {name} {c.ddl:.200}: decoded {have!r:.300} "
                f"!= SELECT {expect!r:.300}\n    statement: {statement[:500]}"
            )


def compare(changes: Iterable[Change], wl: Workload, flavor: str) -> Outcome:
    """Compare the decoded changes of ``wl``'s database with its expected images."""
    out = Outcome()
    decoded: dict[int, list[Change]] = {}
    current: list[Change] | None = None
    ended = False
    for ch in changes:
        if ch.schema != wl.database:
            continue
        if ch.table == "m":
            assert ch.after is not None
            number = int(next(iter(ch.after.values())))
            if number == wl.end_marker:
                ended = True
                break
            current = decoded.setdefault(number, [])
            continue
        if current is None:
            out.mismatches.append(f"a change before any transaction marker: {ch!r:.300}")
            continue
        current.append(ch)
    if not ended:
        out.mismatches.append("the end marker was never decoded")
    full_image = wl.row_image == "FULL"
    for tx in wl.transactions:
        got = decoded.pop(tx.number, None)
        if not tx.committed:
            if got is not None:
                out.mismatches.append(f"tx {tx.number} was rolled back but decoded")
            continue
        if got is None:
            out.mismatches.append(f"tx {tx.number} committed but not decoded")
            continue
        if [c.op for c in got] != [e.op for e in tx.changes]:
            out.mismatches.append(
                f"tx {tx.number}: decoded ops {[c.op for c in got]} != {[e.op for e in tx.changes]}"
            )
            continue
        for ch, exp in zip(got, tx.changes, strict=True):
            if exp.before is not None:
                assert ch.before is not None
                _image(
                    out,
                    wl,
                    tx,
                    f"{exp.op}-before",
                    ch.before,
                    exp.before,
                    full_image,
                    flavor,
                    exp.statement,
                )
            if exp.after is not None:
                assert ch.after is not None
                _image(
                    out,
                    wl,
                    tx,
                    f"{exp.op}-after",
                    ch.after,
                    exp.after,
                    full_image or exp.op == "insert",
                    flavor,
                    exp.statement,
                )
    for number in decoded:
        out.mismatches.append(f"decoded a transaction {number} that was never run")
    return out


_TOOL_ROW = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]*)`\.`([^`]*)`", re.M)
_TOOL_OPS = {b"INSERT INTO": "insert", b"UPDATE": "update", b"DELETE FROM": "delete"}


def tool_counts(
    server: DatabaseServer, files: Sequence[Any], database: str
) -> tuple[dict[str, int], bool]:
    """Rows per op of ``database``.t as the server's own binlog tool prints them, and
    whether it printed them all (mysqlbinlog 9.7 stops an event at a GEOMETRY column,
    "Don't know how to handle column type=255", and sometimes crashes after it)."""
    argv = [*server.binlog_tool(), "--verbose", "--base64-output=DECODE-ROWS"]
    if server.variant.encrypt:
        # the tool cannot decrypt a file: it reads the same files from the server
        argv += [
            "--read-from-remote-server",
            f"--host={server.host}",
            f"--port={server.port}",
            f"--user={server.user}",
            f"--password={server.password}",
            *(Path(f).name for f in files),
        ]
    else:
        argv += map(str, files)
    run = subprocess.run(
        argv,
        capture_output=True,
        check=False,
        timeout=300,
    )
    unknown = b"Don't know how to handle column type" in run.stdout
    # mysqlbinlog 9.7 sometimes dies of SIGSEGV printing rows (after such a column, or
    # in a VECTOR): what it printed before still counts, as an incomplete count
    crashed = run.returncode < 0
    assert run.returncode == 0 or crashed, (run.returncode, run.stderr.decode(errors="replace"))
    counts = {"insert": 0, "update": 0, "delete": 0}
    for m in _TOOL_ROW.finditer(run.stdout):
        if m[2].decode() == database and m[3] == b"t":
            counts[_TOOL_OPS[m[1]]] += 1
    return counts, not (unknown or crashed)
