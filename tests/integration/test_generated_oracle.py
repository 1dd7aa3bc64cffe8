"""Generated tables, values, transactions and DDL: every decoded change equals SELECT,
names included, on every server, in its recommended settings and in its own defaults.

For each seed (tests/gen_oracle): a random table of every column type the
flavour has, random edge values, random transactions with primary-key changes
and rollbacks, and random DDL between them (ADD/DROP/MODIFY/CHANGE/RENAME
COLUMN at random places, type and character set changes, CONVERT TO CHARACTER
SET, DROP and CREATE of the table with other columns, a gh-ost-style swap),
under a random binlog_row_image and one binlog_row_metadata (FULL, MINIMAL,
NO_LOG on MariaDB: set for the seed on the recommended servers, the server's
own on those started with their defaults, which also log MIXED: the writer's
session asks for ROW). The names and types the binlog lacks come from the
schema history. Every decoded image is compared, keys (the columns' names at
the time, in order) and values, with the server's SELECT of the same row, by
each consumer:

- live: a stream started at "now" before the workload, reading while it runs;
- restarted: another such stream, stopped at a transaction before a DDL, its
  ``checkpoint.to_json()`` kept, and a new stream from
  ``Checkpoint.from_json(...)``: together every change exactly once;
- lagging: a stream started after the workload at its first binlog position
  (the history read then, the binlog scanned for DDL), and the binlog files
  decoded with the history read before the workload started.

The Spark executor's rows of the same files (given that history) must be the
JSON of the files' changes, and the row counts those of the server's own
binlog tool. The suite runs this module again on the pure-Python path
(scripts/test.sh).

``REPLICA_CLIENT_SOAK=full`` runs 300 seeds per server and metadata mode
instead of the fixed set (``REPLICA_CLIENT_SOAK=<n>``: n of them;
``REPLICA_CLIENT_SOAK_SKIP=<k>`` leaves out the first k, to go on with a
stopped run: it prints a line per seed).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import replica_client as rc
from replica_client.aio.control import ask
from replica_client.changes import Change
from replica_client.checkpoint import Checkpoint
from replica_client.control.queries import prepare_history
from replica_client.jsonvalues import json_row
from replica_client.schema.history import SchemaHistory
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import DatabaseServer, ServerVariant
from tests import loops, oracle
from tests.gen_oracle.run import (
    MODES,
    Outcome,
    Workload,
    compare,
    new_workload,
    run_workload,
    tool_counts,
)
from tests.integration._stream_support import config_for, repl_user

_SOAK = os.environ.get("REPLICA_CLIENT_SOAK", "")


@dataclass(frozen=True)
class Server:
    variant: ServerVariant
    #: the first seed; the fixed set runs ``seeds`` from there
    first: int
    seeds: int


#: server -> its variant and fixed seeds
SERVERS: dict[str, Server] = {
    "mariadb-10.11": Server(ServerVariant(), 1, 6),
    "mariadb-10.11-defaults": Server(ServerVariant.server_defaults(), 5001, 4),
    "mariadb-11.8": Server(ServerVariant(flavor="mariadb", version="11.8"), 1001, 6),
    "mariadb-11.8-defaults": Server(ServerVariant.server_defaults("mariadb", "11.8"), 6001, 4),
    "mysql-9.7": Server(ServerVariant(flavor="mysql", version="9.7"), 2001, 6),
    "mysql-9.7-defaults": Server(ServerVariant.server_defaults("mysql", "9.7"), 7001, 4),
    "mariadb-10.11-compressed-encrypted": Server(
        ServerVariant(compress=True, encrypt=True), 3001, 3
    ),
    "mysql-9.7-transaction-compression": Server(
        ServerVariant(flavor="mysql", version="9.7", transaction_compression=True), 4001, 3
    ),
}

#: what the runs of this process compared (printed at the end of each test: ``-s``)
TOTALS = {"seeds": 0, "changes": 0, "values": 0, "ddl": 0}


def _modes(server: Server) -> tuple[str, ...]:
    """The binlog_row_metadata modes the server's seeds cycle through ("server": its own)."""
    if server.variant.is_server_defaults:
        return ("server",)
    return MODES[server.variant.flavor]


def _seeds(name: str) -> list[tuple[int, str]]:
    """(seed, metadata mode) of the server's run: the fixed set, or the soak's."""
    server = SERVERS[name]
    modes = _modes(server)
    if _SOAK:
        count = 300 if _SOAK == "full" else int(_SOAK)
        total = count * len(modes)
    else:
        total = server.seeds
    seeds = range(server.first, server.first + total)
    skip = int(os.environ.get("REPLICA_CLIENT_SOAK_SKIP", "0")) if _SOAK else 0
    return [(seed, modes[seed % len(modes)]) for seed in seeds[skip:]]


# -- the consumers ----------------------------------------------------------------------------


@dataclass
class _Consumed:
    changes: list[Change] = field(default_factory=list)
    error: str | None = None
    #: the last transaction marker seen
    last: int = 0
    #: where a stopped stream stood (Checkpoint.to_json)
    checkpoint: str | None = None


async def _settled(wl: Workload, number: int) -> None:
    """Until the workload committed a transaction after ``number``, or ended."""
    while not wl.done and not any(
        tx.committed and tx.number > number for tx in wl.transactions[number:]
    ):
        await asyncio.sleep(0.005)


def _followed_by_ddl(wl: Workload, number: int) -> bool:
    """True when a DDL ran between committed transaction ``number`` and the next
    committed one (or the end)."""
    tx = wl.transactions[number - 1]
    later = [t for t in wl.transactions[number:] if t.committed]
    return (later[0].ddl if later else len(wl.ddl)) > tx.ddl


async def _consume(
    stream: rc.BinlogStream, wl: Workload, stop: Callable[[int], Awaitable[bool]] | None = None
) -> _Consumed:
    """The changes of ``wl``'s database up to its end marker (or until ``stop(number)``
    says to stop at a transaction: its marker and what follows are left out)."""
    out = _Consumed()
    try:
        async with asyncio.timeout(180):
            async for change in stream.changes():
                if change.schema != wl.database:
                    continue
                if change.table == "m" and change.after is not None:
                    number = int(next(iter(change.after.values())))
                    while number > len(wl.transactions) and not wl.done:
                        await asyncio.sleep(0.005)  # the workload notes it after its commit
                    if wl.done and number == wl.end_marker:
                        out.changes.append(change)
                        break
                    out.last = number
                    if stop is not None and await stop(number):
                        out.checkpoint = stream.checkpoint.to_json()
                        break
                out.changes.append(change)
    except Exception as exc:  # the consumer's error is the finding
        out.error = f"{type(exc).__name__}: {exc}"
    return out


def _later_candidate(wl: Workload, number: int) -> bool | None:
    """Whether a committed transaction after ``number`` is followed by DDL (None: not
    known yet)."""
    committed = [t.number for t in wl.transactions[number:] if t.committed]
    if wl.done:
        return any(_followed_by_ddl(wl, n) for n in committed)
    return any(_followed_by_ddl(wl, n) for n in committed[:-1]) or None


def _stopper(wl: Workload) -> Callable[[int], Awaitable[bool]]:
    """Stop at the k-th committed transaction followed by DDL (k random, 1 to 3), or at
    the last one."""
    k = random.Random(f"{wl.seed}:stop").randint(1, 3)
    seen = 0

    async def stop(number: int) -> bool:
        nonlocal seen
        await _settled(wl, number)
        if not _followed_by_ddl(wl, number):
            return False
        seen += 1
        if seen >= k:
            return True
        while (later := _later_candidate(wl, number)) is None:
            await asyncio.sleep(0.005)
        return not later

    return stop


async def _after(srv: DatabaseServer, config: rc.ReplicaConfig, wl: Workload) -> _Consumed:
    async with AsyncExitStack() as stack:
        try:
            stream = await stack.enter_async_context(rc.connect(config))
        except Exception as exc:
            return _Consumed(error=f"{type(exc).__name__}: {exc}")
        return await _consume(stream, wl)


@dataclass
class _Run:
    wl: Workload
    before: SchemaHistory
    consumed: dict[str, _Consumed]


async def _run(srv: DatabaseServer, wl: Workload, only: frozenset[str] | None) -> _Run:
    """The workload with its live consumers, then the restarted and lagging ones."""
    consumed: dict[str, _Consumed] = {}
    before = (await ask(config_for(srv), prepare_history(None, "now"))).history
    conn = oracle.connect(srv.host, srv.port, srv.user, srv.password)
    try:
        async with AsyncExitStack() as stack:
            live = await stack.enter_async_context(rc.connect(config_for(srv, start="now")))
            first = await stack.enter_async_context(rc.connect(config_for(srv, start="now")))
            tasks = {
                "live": asyncio.create_task(_consume(live, wl)),
                "restarted": asyncio.create_task(_consume(first, wl, _stopper(wl))),
            }
            try:
                await asyncio.to_thread(
                    run_workload,
                    srv,
                    conn,
                    wl.seed,
                    only=only,
                    metadata=wl.metadata,
                    workload=wl,
                )
            except BaseException:
                for task in tasks.values():
                    task.cancel()
                raise
            for name, task in tasks.items():
                consumed[name] = await task
    finally:
        conn.close()
    stopped = consumed["restarted"]
    if stopped.error is None and stopped.checkpoint is not None:
        start = Checkpoint.from_json(stopped.checkpoint)
        rest = await _after(srv, config_for(srv, start=start), wl)
        stopped.changes += rest.changes
        stopped.error = rest.error
        stopped.last = rest.last
    elif stopped.error is None:
        stopped.error = "the stream to restart never stopped (no transaction before a DDL)"
    return _Run(wl, before, consumed)


def _decode_files(
    srv: DatabaseServer, files: list[Path], history: SchemaHistory
) -> tuple[list[Change], str | None]:
    got: list[Change] = []
    try:
        with rc.open_binlog(files, key_file=srv.key_file, schema_history=history) as events:
            for change in rc.iter_changes(events):
                got.append(change)
    except Exception as exc:
        return got, f"{type(exc).__name__}: {exc}"
    return got, None


def _spark_executor(
    srv: DatabaseServer, files: list[Path], history: SchemaHistory, changes: list[Change]
) -> list[str]:
    """The Spark executor's rows of the files (Arrow, JSON images) against ``changes``.

    ``changes`` were compared with SELECT; the executors, each reading a span
    of a file with the history valid at its start, must give the same rows:
    the same op, keys and values, as the JSON the project writes everywhere
    (``jsonvalues``).
    """
    from replica_client.spark.options import parse_options
    from replica_client.spark.source import BinlogBatchReader, changelog_schema

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.json"
        path.write_text(json.dumps(history.to_json()), encoding="utf-8")
        # small spans: files are read by several tasks, each from its own transaction
        options = {
            "path": ",".join(map(str, files)),
            "splitBytes": "4096",
            "schemaHistory": str(path),
        }
        if srv.key_file is not None:
            options["keyFile"] = str(srv.key_file)
        try:
            reader = BinlogBatchReader(parse_options(options), changelog_schema())
            parts = reader.partitions()
            if srv.key_file is None:
                assert len(parts) > len(files)
            rows = [
                row
                for part in parts
                for batch in reader._batches(part.path, part.span, part.history)
                for row in batch.to_pylist()
            ]
        except Exception as exc:
            return [f"[spark] {type(exc).__name__}: {exc}"]
    ops = {"insert": "c", "update": "u", "delete": "d"}
    got = [(r["op"], r["db"], r["table"], r["before"], r["after"]) for r in rows]
    want = [
        (
            ops[c.op],
            c.schema,
            c.table,
            None if c.before is None else json_row(c.before),
            None if c.after is None else json_row(c.after),
        )
        for c in changes
    ]
    if len(got) != len(want):
        return [f"[spark] {len(got)} rows for {len(want)} changes"]
    problems = []
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        decoded = (*g[:3], *(None if v is None else json.loads(v) for v in g[3:]))
        if decoded != w:
            problems.append(f"[spark] row {i}: {decoded!r:.400} != {w!r:.400}")
    return problems


def _one_seed(
    srv: DatabaseServer, seed: int, mode: str, only: frozenset[str] | None = None
) -> list[str]:
    """Run one seed; the mismatches of every consumer (empty: all equal)."""
    srv.sql("FLUSH BINARY LOGS")
    first = srv.binlog_files()[-1]
    wl = new_workload(srv, seed, only, mode)
    own = str(srv.sql("SELECT @@GLOBAL.binlog_row_metadata")[0][0]).upper()
    if wl.metadata != own:
        srv.sql(f"SET GLOBAL binlog_row_metadata = '{wl.metadata}'")
    try:
        run = loops.run(_run(srv, wl, only))
        srv.sql("FLUSH BINARY LOGS")
        lagging = loops.run(_after(srv, config_for(srv, start=rc.FilePos(first.name, 4)), wl))
    finally:
        if wl.metadata != own:
            srv.sql(f"SET GLOBAL binlog_row_metadata = '{own}'")
    files = [f for f in srv.binlog_files()[:-1] if f.name >= first.name]
    flavor = srv.variant.flavor
    from_files, files_error = _decode_files(srv, files, run.before)
    consumed = {**run.consumed, "lagging": lagging}
    consumed["files"] = _Consumed(from_files, files_error)
    problems: list[str] = []
    results: dict[str, Outcome] = {}
    for path, got in consumed.items():
        outcome = results[path] = compare(got.changes, wl, flavor)
        if got.error is not None:
            outcome.fail(wl.end_marker, f"{got.error} (after tx {got.last})")
            problems.append(f"[{path}] after tx {got.last}: {got.error}")
            continue
        problems += [f"[{path}] {m}" for m in outcome.mismatches]
    if not problems:
        problems += _spark_executor(srv, files, run.before, from_files)
    expected = wl.counts()
    counted, complete = tool_counts(srv, files, wl.database)
    # The seed's database goes: a long run's later seeds read the same few tables at
    # connect (else the history captured per stream grows with every seed run).
    srv.sql(f"DROP DATABASE IF EXISTS {wl.database}")
    if counted != expected if complete else any(counted[op] > expected[op] for op in expected):
        problems.append(f"[binlog tool] rows per op {counted} != the workload's {expected}")
    if not problems:
        assert results["files"].compared > 0 or not any(expected.values())
        TOTALS["seeds"] += 1
        TOTALS["changes"] += sum(expected.values())
        TOTALS["values"] += sum(o.compared for o in results.values())
        TOTALS["ddl"] += len(wl.ddl)
        return []
    firsts = [o.first_failing for o in results.values() if o.first_failing is not None]
    report = [wl.describe(min(firsts) if firsts else None), *problems[:20]]
    failing = set().union(*(o.failing_columns for o in results.values()))
    if only is None and failing:
        smaller = frozenset({"id", "rev", *failing})
        shrunk = _one_seed(srv, seed, mode, smaller)
        if shrunk:
            report = ["shrunk to the columns " + ", ".join(sorted(smaller)) + ":", *shrunk]
    return report


@pytest.mark.parametrize("name", list(SERVERS))
def test_generated_tables_decode_as_select(
    mariadb_primary_factory: PrimaryFactory, name: str
) -> None:
    srv = mariadb_primary_factory(SERVERS[name].variant)
    repl_user(srv)
    failures: dict[int, list[str]] = {}
    before = dict(TOTALS)
    for seed, mode in _seeds(name):
        problems = _one_seed(srv, seed, mode)
        if problems:
            failures[seed] = problems
        if _SOAK:  # a long run reports as it goes: a stopped run still has its figures
            done = ", ".join(f"{TOTALS[k] - before[k]} {k}" for k in TOTALS)
            print(f"{name} seed {seed} {mode}: {'FAIL' if problems else 'ok'} ({done})", flush=True)
    print(f"{name}: " + ", ".join(f"{TOTALS[k] - before[k]} {k}" for k in TOTALS))
    assert not failures, "\n\n".join(
        f"seed {seed}:\n" + "\n".join(lines) for seed, lines in failures.items()
    )
