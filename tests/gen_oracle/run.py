"""Run one seed of the generated oracle on a live server and compare every decoded value.

The workload: a generated table (``schema.generate_table``) in a database of
its own, then seeded transactions of multi-row inserts, updates (primary-key
changes included), deletes and rollbacks, with random DDL between them:

- ``ALTER TABLE`` of one to three ADD / DROP / MODIFY / CHANGE / RENAME COLUMN
  clauses at random places (FIRST, AFTER), type changes within a type's family
  and across families, character set changes of a column, and ``CONVERT TO
  CHARACTER SET``;
- ``DROP TABLE`` and ``CREATE TABLE`` of the same name with other columns;
- a gh-ost-style swap: ``CREATE TABLE _t_gho LIKE t``, an ``ALTER`` of it,
  chunks of ``INSERT IGNORE INTO _t_gho SELECT ... FROM t`` while the
  transactions on ``t`` go on and are mirrored to ``_t_gho``, then ``RENAME
  TABLE t TO _t_del, _t_gho TO t`` and ``DROP TABLE _t_del``.

Every transaction starts with an insert into a marker table, so the decoded
changes of each one are found again whatever the server did with the others.
Before a transaction the rows it will touch are read with ``SELECT``; after it,
the rows it wrote: those images, in the server's own text forms (``CAST(...
AS CHAR)``, raw bytes, ``+ 0e0`` for FLOAT), keyed by the names the table's
columns had at that moment, are what every decoded image must equal. The
order of a table's columns after a DDL is the server's (information_schema),
never the oracle's guess. Values of a column come from a random stream of
their own, so the same seed with fewer columns writes the same values: that is
how a failure is shrunk to the smallest failing table.

The writer's session sets ``binlog_format=ROW`` (a server in its own defaults
logs MIXED) and the seed's ``binlog_row_image``; ``binlog_row_metadata``
(FULL, MINIMAL and, on MariaDB, NO_LOG) is set globally for the seed where the
caller asks for it.
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
from tests.gen_oracle.schema import (
    CHARSETS,
    FAMILIES,
    GenColumn,
    GenTable,
    extra_column,
    generate_column,
    generate_table,
)

__all__ = [
    "MODES",
    "Expected",
    "Outcome",
    "Text",
    "Transaction",
    "Workload",
    "compare",
    "new_workload",
    "run_workload",
    "tool_counts",
]

ROW_IMAGES = ("FULL", "MINIMAL", "NOBLOB")
#: binlog_row_metadata values per flavour
MODES: dict[str, tuple[str, ...]] = {
    "mariadb": ("FULL", "MINIMAL", "NO_LOG"),
    "mysql": ("FULL", "MINIMAL"),
}
#: the chance of DDL before a transaction
DDL_CHANCE = 0.3
#: character sets whose ASCII characters are not single ASCII bytes (ENUM/SET labels
#: keep their bytes through CONVERT TO CHARACTER SET: the server reads them anew)
_WIDE = frozenset({"ucs2", "utf16", "utf16le", "utf32"})
_SAME_BYTES = frozenset({("utf8mb3", "utf8mb4"), ("ucs2", "utf16")})


@dataclass
class Expected:
    """One row change the decoder must report, with the server's images of the row."""

    op: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    statement: str
    #: the table written ("t", or the gh-ost table "_t_gho")
    table: str = "t"
    #: that table's columns when the row was written (empty: the transaction's)
    columns: tuple[GenColumn, ...] = ()
    #: an insert naming only these columns (a MINIMAL after image has only them)
    listed: frozenset[str] | None = None


@dataclass
class Transaction:
    number: int
    #: the columns of ``t`` when it ran
    columns: tuple[GenColumn, ...]
    committed: bool
    changes: list[Expected] = field(default_factory=list)
    #: how many of the workload's DDL statements ran before it
    ddl: int = 0


@dataclass
class Workload:
    seed: int
    database: str
    table: GenTable
    row_image: str
    #: binlog_row_metadata during the workload (FULL, MINIMAL, NO_LOG)
    metadata: str
    #: the server's label (ServerVariant.label)
    server: str = ""
    #: (the transaction it ran before, the statement); the end marker's number at the end
    ddl: list[tuple[int, str]] = field(default_factory=list)
    transactions: list[Transaction] = field(default_factory=list)
    #: set when the last statement ran
    done: bool = False

    @property
    def full_metadata(self) -> bool:
        return self.metadata == "FULL"

    @property
    def end_marker(self) -> int:
        return len(self.transactions) + 1

    def ddl_after_a_commit(self) -> bool:
        """Whether a DDL statement ran after a committed transaction."""
        return any(tx.committed and tx.ddl < len(self.ddl) for tx in self.transactions)

    def counts(self) -> dict[str, int]:
        """Rows per op written to the table named ``t`` at the time."""
        out = {"insert": 0, "update": 0, "delete": 0}
        for tx in self.transactions:
            if tx.committed:
                for ch in tx.changes:
                    if ch.table == "t":
                        out[ch.op] += 1
        return out

    def describe(self, upto: int | None = None) -> str:
        """The seed, server and modes, and the DDL run before transaction ``upto`` (all)."""
        head = (
            f"seed={self.seed} server={self.server or '?'} binlog_row_image={self.row_image} "
            f"binlog_row_metadata={self.metadata}"
        )
        shown = [(n, sql) for n, sql in self.ddl if upto is None or n <= upto]
        lines = [f"  [before tx {n}] {sql[:3000]}" for n, sql in shown]
        more = len(self.ddl) - len(shown)
        tail = [f"  ... and {more} DDL statements after tx {upto}"] if more else []
        return "\n".join([head, "DDL so far:", *lines, *tail])


def _oracle_column(c: GenColumn) -> oracle.Column:
    return oracle.Column(c.name, c.ddl, c.kind, c.fsp)


def _select_expr(c: GenColumn, flavor: str) -> str:
    n = f"`{c.name}`"
    if c.kind == "int" and "ZEROFILL" in c.ddl:
        return f"CAST({n} + 0 AS CHAR)"
    if c.kind == "json":
        return f"CAST({n} AS CHAR)" if flavor == "mysql" else n
    if c.kind == "text":
        # as bytes: a conversion may give bytes that are not UTF-8 (surrogates a
        # ucs2/utf16 value carried into utf8mb3), which SELECT's client cannot decode
        return f"CAST(CONVERT({n} USING utf8mb4) AS BINARY)"
    if c.kind == "vector":
        return f"HEX({n})"  # the float32 values exactly
    return oracle._select_expr(_oracle_column(c), True)


@dataclass(frozen=True)
class Text:
    """A text value as SELECT gives it: converted to utf8mb4 (``?`` for what cannot be
    converted) and its stored bytes. ``utf8``: the conversion is valid UTF-8 (a
    utf8mb3 value holding encoded surrogates, which the server passes on as they
    are, is not)."""

    text: str
    raw: bytes
    utf8: bool = True
    #: CHAR_LENGTH of the stored value: more than the conversion's characters when the
    #: server stopped converting at a character it cannot (MySQL does, without "?")
    chars: int | None = None

    def converted(self) -> bool:
        """Whether SELECT shows the whole value as text."""
        whole = self.chars is None or self.chars == len(self.text)
        return self.utf8 and whole and "?" not in self.text

    def __repr__(self) -> str:
        return repr(self.text)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _value(seed: int, where: str, c: GenColumn) -> str:
    return c.value(random.Random(f"{seed}:{where}:{c.name}"))


# -- the workload ----------------------------------------------------------------------------


@dataclass
class _Table:
    """What the oracle knows of one table of the workload."""

    name: str
    columns: list[GenColumn]
    ids: set[int] = field(default_factory=set)
    #: a gh-ost table: its column -> the column of ``t`` it is copied from
    origin: dict[str, str] = field(default_factory=dict)
    #: a gh-ost table: the next id to copy, and the last
    copy_next: int = 0
    copy_last: int = 0

    def by_name(self) -> dict[str, GenColumn]:
        return {c.name: c for c in self.columns}


class _Runner:
    def __init__(
        self,
        server: DatabaseServer,
        cur: Any,
        wl: Workload,
        r: random.Random,
        max_columns: int,
    ) -> None:
        self.server = server
        self.cur = cur
        self.wl = wl
        self.r = r
        self.flavor = server.variant.flavor
        self.version = server.variant.version or ""
        self.exact = wl.metadata != "FULL"
        self.max_columns = max_columns
        self.t = _Table("t", [])
        self.ghost: _Table | None = None
        self.next_id = 1
        self.names = 0  # new column names drawn
        self.recreated = 0

    # -- helpers ---------------------------------------------------------------------------

    def q(self, table: str) -> str:
        return f"{self.wl.database}.{table}"

    def images(self, table: _Table, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        columns = table.columns
        texts = [c for c in columns if c.kind == "text"]
        exprs = [_select_expr(c, self.flavor) for c in columns]
        exprs += [f"CAST(`{c.name}` AS BINARY)" for c in texts]
        exprs += [f"CHAR_LENGTH(`{c.name}`)" for c in texts]
        self.cur.execute(
            f"SELECT id, {', '.join(exprs)} FROM {self.q(table.name)} "
            f"WHERE id IN ({','.join(map(str, wanted))})"
        )
        out: dict[int, dict[str, Any]] = {}
        for row in self.cur.fetchall():
            values = list(row[1 : 1 + len(columns)])
            valid: dict[str, bool] = {}
            for i, c in enumerate(columns):
                if c.kind == "text" and values[i] is not None:
                    converted = bytes(values[i])
                    valid[c.name] = _is_utf8(converted)
                    values[i] = converted.decode("utf-8", "replace")
            image = {
                c.name: oracle.canonical_selected(_oracle_column(c), v, True)
                for c, v in zip(columns, values, strict=True)
            }
            n = len(texts)
            raws = row[1 + len(columns) : 1 + len(columns) + n]
            lengths = row[1 + len(columns) + n :]
            for c, raw, chars in zip(texts, raws, lengths, strict=True):
                if raw is not None:
                    image[c.name] = Text(image[c.name], bytes(raw), valid[c.name], int(chars))
            out[int(row[0])] = image
        return out

    def ids_in(self, table: _Table, where: str) -> list[int]:
        self.cur.execute(f"SELECT id FROM {self.q(table.name)} WHERE {where} ORDER BY id")
        return [int(row[0]) for row in self.cur.fetchall()]

    def server_order(self, table: _Table) -> None:
        """Put ``table``'s columns in the server's order (and check the oracle's names)."""
        self.cur.execute(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (self.wl.database, table.name),
        )
        names = [str(row[0]) for row in self.cur.fetchall()]
        known = table.by_name()
        if sorted(names) != sorted(known):
            raise AssertionError(
                f"the oracle's columns of {table.name} {sorted(known)} are not the server's "
                f"{sorted(names)} after: {self.wl.ddl[-1][1]}"
            )
        table.columns = [known[n] for n in names]

    def ddl(self, sql: str, number: int) -> bool:
        """Run a DDL statement; False when the server refused it (nothing changed)."""
        try:
            self.cur.execute(sql)
        except pymysql.err.MySQLError:
            return False
        self.wl.ddl.append((number, sql))
        return True

    def new_name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    # -- tables ----------------------------------------------------------------------------

    def create(self, table: _Table, gen: GenTable, number: int) -> None:
        """CREATE TABLE of ``gen``'s columns (the widest left out while the row is too big)."""
        columns = list(gen.columns)
        while True:
            sql = GenTable(gen.seed, tuple(columns)).ddl(self.q(table.name))
            try:
                self.cur.execute(sql)
                break
            except pymysql.err.OperationalError as exc:
                if exc.args[0] not in (1118, 1074, 1071):  # row size / column length
                    raise
                widest = max(
                    (c for c in columns if c.name not in ("id", "rev")),
                    key=lambda c: c.row_bytes + (500 if c.blob else 0),
                )
                columns.remove(widest)
        self.wl.ddl.append((number, sql))
        table.columns = columns
        table.ids = set()
        self.server_order(table)

    # -- DDL -------------------------------------------------------------------------------

    def random_ddl(self, number: int, forced: bool) -> None:
        r = self.r
        pick = r.random()
        if forced or pick < 0.55:
            if not self.alter(self.t, number) and forced:
                self.recreate(number)
        elif pick < 0.68:
            if not self.convert(self.t, number) and forced:
                self.recreate(number)
        elif pick < 0.8:
            self.recreate(number)
        else:
            self.start_ghost(number)

    def _position(self, r: random.Random, choices: Sequence[str]) -> str:
        roll = r.random()
        if roll < 0.35:
            return ""
        if roll < 0.5 or not choices:
            return " FIRST"
        return f" AFTER `{r.choice(list(choices))}`"

    def _new_type(self, old: GenColumn, name: str, same_family: bool) -> GenColumn:
        r = self.r
        if same_family and old.kind in ("geometry", "vector"):
            return old.renamed(name)  # no value of one fits another
        family = old.family if same_family and old.family >= 0 else r.randrange(FAMILIES)
        seed = random.Random(f"{self.wl.seed}:{name}:{self.names}:{r.random()}")
        col = generate_column(
            seed, name, self.flavor, self.version, pick=family, exact_labels=self.exact
        )
        if col.row_bytes > 2_000:
            col = generate_column(
                seed, name, self.flavor, self.version, pick=0, exact_labels=self.exact
            )
        return col

    def alter(self, table: _Table, number: int, *, compatible: bool = False) -> bool:
        """One ALTER TABLE of one to three column clauses; False when refused.

        ``compatible``: type changes within a type's family only (an empty gh-ost
        table takes any change, the rows copied into it must fit)."""
        r = self.r
        columns = table.by_name()
        data = [c.name for c in table.columns if c.name not in ("id", "rev")]
        touched: set[str] = set()
        clauses: list[str] = []
        after: dict[str, GenColumn | None] = dict(columns)  # name -> column (None: dropped)
        renamed: dict[str, str] = {}  # new name -> old name
        for _ in range(r.choice([1, 1, 2, 3])):
            free = [n for n in data if n not in touched]
            anchors = [c.name for c in table.columns if c.name not in touched]
            kind = r.choice(["add", "add", "drop", "modify", "change", "rename", "charset"])
            if kind != "add" and not free:
                kind = "add"
            if kind == "add":
                index = self.names
                col = extra_column(
                    self.wl.seed, index, self.flavor, self.version, exact_labels=self.exact
                )
                col = col.renamed(self.new_name("a"))
                if col.kind in ("geometry", "json"):
                    col = col.nullable_copy()  # NOT NULL needs a value for the rows there
                clauses.append(f"ADD COLUMN `{col.name}` {col.ddl}{self._position(r, anchors)}")
                after[col.name] = col
                touched.add(col.name)
            elif kind == "drop":
                name = r.choice(free)
                clauses.append(f"DROP COLUMN `{name}`")
                after[name] = None
                touched.add(name)
            elif kind == "rename":
                name = r.choice(free)
                new = self.new_name("r")
                clauses.append(f"RENAME COLUMN `{name}` TO `{new}`")
                old = after.pop(name)
                assert old is not None
                after[new] = old.renamed(new)
                renamed[new] = name
                touched |= {name, new}
            else:
                if kind == "charset":
                    texts = [n for n in free if columns[n].charset is not None]
                    if not texts:
                        kind = "modify"
                        name = r.choice(free)
                    else:
                        name = r.choice(texts)
                else:
                    name = r.choice(free)
                old = columns[name]
                new = self.new_name("r") if kind == "change" else name
                if kind == "charset":
                    charsets = [cs for cs in CHARSETS if cs != old.charset]
                    seed = random.Random(f"{self.wl.seed}:{name}:{self.names}:{r.random()}")
                    col = generate_column(
                        seed,
                        new,
                        self.flavor,
                        self.version,
                        pick=old.family,
                        charset=r.choice(charsets),
                        exact_labels=self.exact,
                    )
                elif kind == "change" and r.random() < 0.3:
                    col = old.renamed(new)  # CHANGE to the same type: a rename
                else:
                    col = self._new_type(old, new, compatible or r.random() < 0.5)
                anchors = [a for a in anchors if a != name]
                if kind == "change":
                    head = f"CHANGE COLUMN `{name}` `{new}`"
                else:
                    head = f"MODIFY COLUMN `{name}`"
                clauses.append(f"{head} {col.ddl}{self._position(r, anchors)}")
                after.pop(name)
                after[new] = col
                if new != name:
                    renamed[new] = name
                touched |= {name, new}
        sql = f"ALTER TABLE {self.q(table.name)} " + ", ".join(clauses)
        if not self.ddl(sql, number):
            return False
        kept = {n: c for n, c in after.items() if c is not None}
        if table.origin or table.name != "t":
            origin = {}
            for n in kept:
                source = table.origin.get(renamed.get(n, n))
                if source is not None:
                    origin[n] = source
            table.origin = origin
        table.columns = list(kept.values())
        self.server_order(table)
        return True

    def convert(self, table: _Table, number: int) -> bool:
        """ALTER TABLE ... CONVERT TO CHARACTER SET (where the labels of its ENUM/SET
        columns keep their meaning, unless the binlog carries them)."""
        r = self.r
        choices = []
        for cs in CHARSETS:
            ok = True
            for c in table.columns:
                # (with any metadata: labels read anew may not even decode in the binlog)
                if c.kind not in ("enum", "set") or c.charset is None:
                    continue
                same = c.charset == cs or (c.charset, cs) in _SAME_BYTES
                ascii_labels = all(ch.isascii() for ch in c.ddl)
                if not same and (c.charset in _WIDE or cs in _WIDE or not ascii_labels):
                    ok = False
            if ok:
                choices.append(cs)
        if not choices:
            return False
        cs = r.choice(choices)
        if not self.ddl(f"ALTER TABLE {self.q(table.name)} CONVERT TO CHARACTER SET {cs}", number):
            return False
        table.columns = [c.converted(cs) for c in table.columns]
        self.server_order(table)
        return True

    def recreate(self, number: int) -> None:
        """DROP TABLE t, and CREATE TABLE t of other columns (of the same names, often)."""
        self.recreated += 1
        assert self.ddl(f"DROP TABLE {self.q('t')}", number)
        gen = generate_table(
            f"{self.wl.seed}:recreate:{self.recreated}",
            self.flavor,
            self.version,
            max(2, self.max_columns // 3),
            exact_labels=self.exact,
        )
        self.create(self.t, gen, number)

    # -- gh-ost ----------------------------------------------------------------------------

    def start_ghost(self, number: int) -> None:
        ghost = _Table("_t_gho", list(self.t.columns))
        assert self.ddl(f"CREATE TABLE {self.q('_t_gho')} LIKE {self.q('t')}", number)
        ghost.origin = {c.name: c.name for c in ghost.columns}
        self.server_order(ghost)
        for _ in range(3):
            if self.alter(ghost, number, compatible=True):
                break
        ghost.copy_next = 1
        ghost.copy_last = self.next_id - 1
        self.ghost = ghost

    def mirror(self, touched: Iterable[int]) -> tuple[list[str], list[int]]:
        """gh-ost's applier: the rows ``touched`` written again to ``_t_gho``."""
        ghost = self.ghost
        assert ghost is not None
        ids = sorted(set(touched))
        present = [i for i in ids if i in ghost.ids]
        statements = []
        if present:
            statements.append(
                f"DELETE FROM {self.q('_t_gho')} WHERE id IN ({','.join(map(str, present))}) "
                "ORDER BY id"
            )
        statements.append(self._copy(f"id IN ({','.join(map(str, ids))})", ignore=False))
        return statements, present

    def _copy(self, where: str, *, ignore: bool) -> str:
        ghost = self.ghost
        assert ghost is not None
        names = [c.name for c in ghost.columns if c.name in ghost.origin]
        into = ", ".join(f"`{n}`" for n in names)
        source = ", ".join(f"`{ghost.origin[n]}`" for n in names)
        verb = "INSERT IGNORE" if ignore else "INSERT"
        return (
            f"{verb} INTO {self.q('_t_gho')} ({into}) SELECT {source} FROM {self.q('t')} "
            f"WHERE {where} ORDER BY id"
        )

    def copy_chunk(self, number: int) -> Transaction:
        ghost = self.ghost
        assert ghost is not None
        lo = ghost.copy_next
        hi = lo + self.r.randint(1, 12)
        ghost.copy_next = hi + 1
        where = f"id BETWEEN {lo} AND {hi}"
        sql = self._copy(where, ignore=True)
        tx = Transaction(number, tuple(self.t.columns), True, ddl=len(self.wl.ddl))
        cur = self.cur
        cur.execute("BEGIN")
        try:
            cur.execute(f"INSERT INTO {self.q('m')} VALUES ({number})")
            cur.execute(sql)
        except pymysql.err.MySQLError:
            tx.committed = False  # rows that cannot be converted: gh-ost would stop here
        cur.execute("COMMIT" if tx.committed else "ROLLBACK")
        if not tx.committed:
            return tx
        copied = [i for i in self.ids_in(ghost, where) if i not in ghost.ids]
        after = self.images(ghost, copied)
        columns = tuple(ghost.columns)
        listed = frozenset(ghost.origin)
        tx.changes += [
            Expected("insert", None, after[i], sql, "_t_gho", columns, listed) for i in copied
        ]
        ghost.ids.update(copied)
        return tx

    def swap(self, number: int) -> None:
        ghost = self.ghost
        assert ghost is not None
        t, gho, old = self.q("t"), self.q("_t_gho"), self.q("_t_del")
        assert self.ddl(f"RENAME TABLE {t} TO {old}, {gho} TO {t}", number)
        assert self.ddl(f"DROP TABLE {old}", number)
        # (rows whose copy failed are not in the new table)
        self.t = _Table("t", ghost.columns, set(ghost.ids))
        self.ghost = None

    # -- transactions ----------------------------------------------------------------------

    def transaction(self, number: int) -> Transaction:
        r, wl, t = self.r, self.wl, self.t
        plan: list[tuple[str, list[int], list[int]]] = []  # (op, ids, new ids)
        touched: set[int] = set()
        for _ in range(r.randint(1, 5)):
            op = r.choice(["insert", "insert", "update", "update", "pk", "delete"])
            free = sorted(t.ids - touched)
            if op == "insert" or not free:
                ids = list(range(self.next_id, self.next_id + r.randint(1, 5)))
                self.next_id += len(ids) + r.randint(0, 3)
                plan.append(("insert", ids, ids))
            elif op == "pk":
                old = r.choice(free)
                plan.append(("pk", [old], [self.next_id]))
                self.next_id += 1
            else:
                ids = sorted(r.sample(free, min(len(free), r.randint(1, 4))))
                plan.append((op, ids, ids))
            touched.update(plan[-1][1])
            touched.update(plan[-1][2])
        before = self.images(t, [i for op, ids, _ in plan for i in ids if op != "insert"])
        tx = Transaction(
            number, tuple(t.columns), committed=r.random() >= 0.1, ddl=len(self.wl.ddl)
        )
        statements: list[tuple[str, str, list[int], list[int]]] = []
        for k, (op, ids, new) in enumerate(plan):
            sql = _statement(wl, t.columns, wl.seed, number, k, op, ids, new)
            statements.append((op, sql, ids, new))
        ghost = self.ghost
        mirrored: list[str] = []
        present: list[int] = []
        ghost_before: dict[int, dict[str, Any]] = {}
        if ghost is not None:
            mirrored, present = self.mirror(touched)
            ghost_before = self.images(ghost, present)
        cur = self.cur
        cur.execute("BEGIN")
        try:
            cur.execute(f"INSERT INTO {self.q('m')} VALUES ({number})")
            for _, sql, _, _ in statements:
                cur.execute(sql)
            for sql in mirrored:
                cur.execute(sql)
        except pymysql.err.MySQLError:
            tx.committed = False
        cur.execute("COMMIT" if tx.committed else "ROLLBACK")
        if not tx.committed:
            return tx
        written = [i for op, _, new in plan if op != "delete" for i in new]
        after = self.images(t, written)
        for op, sql, ids, new in statements:
            if op == "insert":
                tx.changes += [Expected("insert", None, after[i], sql) for i in ids]
                t.ids.update(ids)
            elif op == "delete":
                tx.changes += [Expected("delete", before[i], None, sql) for i in ids]
                t.ids.difference_update(ids)
            else:
                for old, now in zip(ids, new, strict=True):
                    tx.changes.append(Expected("update", before[old], after[now], sql))
                t.ids.difference_update(ids)
                t.ids.update(new)
        if ghost is not None:
            columns = tuple(ghost.columns)
            tx.changes += [
                Expected("delete", ghost_before[i], None, mirrored[0], "_t_gho", columns)
                for i in present
            ]
            ghost.ids.difference_update(present)
            inserted = self.ids_in(ghost, f"id IN ({','.join(map(str, sorted(touched)))})")
            images = self.images(ghost, inserted)
            listed = frozenset(ghost.origin)
            tx.changes += [
                Expected("insert", None, images[i], mirrored[-1], "_t_gho", columns, listed)
                for i in inserted
            ]
            ghost.ids.update(inserted)
        return tx


def run_workload(
    server: DatabaseServer,
    conn: pymysql.connections.Connection[Any],
    seed: int,
    *,
    only: frozenset[str] | None = None,
    transactions: int = 10,
    max_columns: int = 60,
    metadata: str | None = None,
    workload: Workload | None = None,
) -> Workload:
    """Create the seed's table and run its transactions and DDL (the caller flushed the
    binlog).

    ``metadata``: the binlog_row_metadata to set globally (None: FULL or MINIMAL, as
    the seed draws; "server": leave the server's own). ``workload``: a workload made
    by :func:`new_workload`, filled in here while others watch it (``done`` is set at
    the end).
    """
    wl = workload if workload is not None else new_workload(server, seed, only, metadata)
    r = random.Random(seed * 31 + 11)
    if metadata != "server" and wl.metadata != _global_metadata(server):
        server.sql(f"SET GLOBAL binlog_row_metadata = '{wl.metadata}'")
    cur = conn.cursor()
    cur.execute("SET SESSION binlog_format = 'ROW'")
    cur.execute(f"SET SESSION binlog_row_image = '{wl.row_image}'")
    runner = _Runner(server, cur, wl, r, max_columns)
    try:
        cur.execute(f"DROP DATABASE IF EXISTS {wl.database}")
        cur.execute(f"CREATE DATABASE {wl.database} CHARACTER SET utf8mb4")
        cur.execute(f"CREATE TABLE {wl.database}.m (k INT PRIMARY KEY)")
        table = wl.table
        runner.create(runner.t, table, 1)
        wl.table = GenTable(seed, tuple(runner.t.columns))
        number = 0
        done = 0
        while done < transactions or runner.ghost is not None:
            number += 1
            ghost = runner.ghost
            if ghost is not None:
                if ghost.copy_next <= ghost.copy_last and (
                    done >= transactions or r.random() < 0.6
                ):
                    wl.transactions.append(runner.copy_chunk(number))
                    continue
                if ghost.copy_next > ghost.copy_last and (done >= transactions or r.random() < 0.5):
                    runner.swap(number)
            elif done < transactions and number > 1:
                # the restarted consumer stops before a DDL that follows a committed
                # transaction: make sure there is one (every one before may have been
                # rolled back)
                forced = done == transactions - 1 and not wl.ddl_after_a_commit()
                if forced or r.random() < DDL_CHANCE:
                    runner.random_ddl(number, forced)
            if done >= transactions:
                number -= 1
                continue
            wl.transactions.append(runner.transaction(number))
            done += 1
        cur.execute(f"INSERT INTO {wl.database}.m VALUES ({wl.end_marker})")
    finally:
        wl.done = True
        cur.close()
    return wl


def _global_metadata(server: DatabaseServer) -> str:
    return str(server.sql("SELECT @@GLOBAL.binlog_row_metadata")[0][0]).upper()


def new_workload(
    server: DatabaseServer,
    seed: int,
    only: frozenset[str] | None = None,
    metadata: str | None = None,
    max_columns: int = 60,
) -> Workload:
    """The seed's workload before it runs: its table, row image and metadata mode."""
    flavor, version = server.variant.flavor, server.variant.version or ""
    r = random.Random(seed * 31 + 7)
    row_image = r.choice(ROW_IMAGES)
    drawn = "FULL" if r.random() < 0.6 else "MINIMAL"
    if metadata is None:
        mode = drawn
    elif metadata == "server":
        mode = _global_metadata(server)
    else:
        mode = metadata
    table = generate_table(seed, flavor, version, max_columns, exact_labels=mode != "FULL")
    if only is not None:
        table = GenTable(seed, tuple(c for c in table.columns if c.name in only))
    return Workload(
        seed,
        f"gen_{seed}" + ("_s" if only is not None else ""),
        table,
        row_image,
        mode,
        server.variant.label,
    )


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


# -- comparison ------------------------------------------------------------------------


@dataclass
class Outcome:
    compared: int = 0
    mismatches: list[str] = field(default_factory=list)
    failing_columns: set[str] = field(default_factory=set)
    #: the first transaction with a mismatch (None: none, or not one transaction's)
    first_failing: int | None = None

    def fail(self, number: int | None, message: str) -> None:
        self.mismatches.append(message)
        if number is not None and (self.first_failing is None or number < self.first_failing):
            self.first_failing = number


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


def _canonical(c: GenColumn, value: Any) -> Any:
    if c.kind == "json" and value is not None and not isinstance(value, str):
        return _json_form(value)  # MySQL binary JSON
    if c.kind == "vector" and value is not None:
        if isinstance(value, bytes):  # not whole float32s (left by an ALTER): the bytes
            return value.hex().upper()
        return struct.pack(f"<{len(value)}f", *value).hex().upper()
    return oracle.canonical_decoded(_oracle_column(c), value, True)


def _wanted(c: GenColumn, value: Any, flavor: str, decoded: Any) -> Any:
    if c.kind == "json" and flavor == "mysql" and value is not None:
        return json.loads(value)
    if isinstance(value, Text):
        # bytes the server cannot convert (it shows "?", passes on bytes that are not
        # UTF-8, or stops converting) stay bytes (binlog/charsets.py)
        if isinstance(decoded, bytes) and not value.converted():
            return value.raw
        return value.text
    return value


def _image(
    out: Outcome,
    wl: Workload,
    tx: Transaction,
    exp: Expected,
    what: str,
    got: dict[str, Any],
    want: dict[str, Any],
    required: bool,
    flavor: str,
) -> None:
    columns = exp.columns or tx.columns
    by_name = {c.name: c for c in columns}
    where = f"tx {tx.number} {exp.table} {what}"
    if required:
        absent = set(by_name) - set(got)
        if exp.listed is not None and wl.row_image == "MINIMAL":
            absent &= exp.listed
        if wl.row_image == "NOBLOB":
            absent -= {c.name for c in columns if c.blob}
        if absent:
            out.fail(
                tx.number,
                f"{where}: columns missing: {sorted(absent)} (decoded keys {list(got)})",
            )
    order = [c.name for c in columns if c.name in got]
    if all(k in by_name for k in got) and list(got) != order:
        out.fail(tx.number, f"{where}: decoded keys in the order {list(got)}, the table's {order}")
    for name, value in got.items():
        c = by_name.get(name)
        if c is None:
            out.fail(
                tx.number,
                f"{where}: decoded key {name!r} is not a column of the table then "
                f"({', '.join(by_name)})\n    statement: {exp.statement[:500]}",
            )
            continue
        out.compared += 1
        if name == "id":
            if value != int(want[name]):
                out.fail(tx.number, f"{where}: decoded id {value!r} != SELECT {want[name]!r}")
            continue
        have = _canonical(c, value)
        expect = _wanted(c, want[name], flavor, have)
        if have != expect:
            out.failing_columns.add(name)
            out.fail(
                tx.number,
                f"{where} column {name} {c.ddl:.200}: decoded {have!r:.300} "
                f"!= SELECT {expect!r:.300}\n    statement: {exp.statement[:500]}",
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
            if number in decoded:
                out.fail(number, f"tx {number} decoded twice")
            current = decoded.setdefault(number, [])
            continue
        if current is None:
            out.fail(None, f"a change before any transaction marker: {ch!r:.300}")
            continue
        current.append(ch)
    if not ended:
        out.fail(None, "the end marker was never decoded")
    full_image = wl.row_image == "FULL"
    for tx in wl.transactions:
        got = decoded.pop(tx.number, None)
        if not tx.committed:
            if got is not None:
                out.fail(tx.number, f"tx {tx.number} was rolled back but decoded")
            continue
        if got is None:
            out.fail(tx.number, f"tx {tx.number} committed but not decoded")
            continue
        have = [(c.op, c.table) for c in got]
        want = [(e.op, e.table) for e in tx.changes]
        if have != want:
            out.fail(tx.number, f"tx {tx.number}: decoded {have} != {want}")
            continue
        for ch, exp in zip(got, tx.changes, strict=True):
            if exp.before is not None:
                assert ch.before is not None
                _image(
                    out, wl, tx, exp, f"{exp.op}-before", ch.before, exp.before, full_image, flavor
                )
            if exp.after is not None:
                assert ch.after is not None
                required = full_image or exp.op == "insert"
                _image(out, wl, tx, exp, f"{exp.op}-after", ch.after, exp.after, required, flavor)
    for number in decoded:
        out.fail(number, f"decoded a transaction {number} that was never run")
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
