"""Generated tables, values and transactions: every decoded value equals SELECT, on every server.

For each seed (tests/gen_oracle): a random table of every column type the
flavour has, random edge values, random transactions with primary-key changes,
rollbacks and ALTER TABLE between them, under a random binlog_row_image and
binlog_row_metadata. Every decoded image, from the binlog files and over the
network, is compared value by value with the server's SELECT of the same row;
the Spark executor's rows of the same files must be the JSON of those changes,
and the row counts those of the server's own binlog tool. The suite runs this
module again on the pure-Python path (scripts/test.sh).

``REPLICA_CLIENT_SOAK=full`` runs 500 seeds per server instead of the fixed set.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

import replica_client as rc
from replica_client.changes import Change
from replica_client.jsonvalues import json_row
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import DatabaseServer, ServerVariant
from tests import loops, oracle
from tests.gen_oracle.run import Outcome, Workload, compare, run_workload, tool_counts
from tests.integration._stream_support import config_for, repl_user

_SOAK = os.environ.get("REPLICA_CLIENT_SOAK") == "full"

#: server -> (variant, the seeds of the fixed set)
SERVERS: dict[str, tuple[ServerVariant, range]] = {
    "mariadb-10.11": (ServerVariant(), range(1, 21)),
    "mariadb-11.8": (ServerVariant(flavor="mariadb", version="11.8"), range(1001, 1021)),
    "mysql-9.7": (ServerVariant(flavor="mysql", version="9.7"), range(2001, 2021)),
    "mariadb-10.11-compressed-encrypted": (
        ServerVariant(compress=True, encrypt=True),
        range(3001, 3006),
    ),
    "mysql-9.7-transaction-compression": (
        ServerVariant(flavor="mysql", version="9.7", transaction_compression=True),
        range(4001, 4006),
    ),
}


#: what the runs of this process compared (printed at the end of each test: ``-s``)
TOTALS = {"seeds": 0, "changes": 0, "values": 0}


def _seeds(name: str) -> range:
    fixed = SERVERS[name][1]
    return range(fixed.start, fixed.start + 500) if _SOAK else fixed


def _decode_files(srv: DatabaseServer, files: list[Path]) -> list[Change]:
    with rc.open_binlog(files, key_file=srv.key_file) as events:
        return list(rc.iter_changes(events))


async def _decode_network(srv: DatabaseServer, first: str, wl: Workload) -> list[Change]:
    got: list[Change] = []
    config = config_for(srv, start=rc.FilePos(first, 4))
    async with asyncio.timeout(120), rc.connect(config) as stream:
        async for change in stream.changes():
            if change.schema != wl.database:
                continue
            got.append(change)
            after = change.after if change.table == "m" else None
            if after is not None and int(next(iter(after.values()))) == wl.end_marker:
                break
    return got


def _spark_executor(srv: DatabaseServer, files: list[Path], changes: list[Change]) -> list[str]:
    """The Spark executor's rows of the files (Arrow, JSON images) against ``changes``.

    ``changes`` were compared with SELECT; the executors, each reading a span
    of a file, must give the same
    rows: the same op, keys and values, as the JSON the project writes
    everywhere (``jsonvalues``).
    """
    from replica_client.spark.options import parse_options
    from replica_client.spark.source import BinlogBatchReader, changelog_schema

    # small spans: files are read by several tasks, each from its own transaction
    options = {"path": ",".join(map(str, files)), "splitBytes": "4096"}
    if srv.key_file is not None:
        options["keyFile"] = str(srv.key_file)
    reader = BinlogBatchReader(parse_options(options), changelog_schema())
    parts = reader.partitions()
    if srv.key_file is None:
        assert len(parts) > len(files)
    rows = [
        row
        for part in parts
        for batch in reader._batches(part.path, part.span)
        for row in batch.to_pylist()
    ]
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


def _one_seed(srv: DatabaseServer, seed: int, only: frozenset[str] | None = None) -> list[str]:
    """Run one seed; the mismatches of every path (empty: all equal)."""
    srv.sql("FLUSH BINARY LOGS")
    first = srv.binlog_files()[-1]
    conn = oracle.connect(srv.host, srv.port, srv.user, srv.password)
    try:
        wl = run_workload(srv, conn, seed, only=only)
    finally:
        conn.close()
        srv.sql(f"SET GLOBAL binlog_row_metadata = '{srv.variant.row_metadata}'")
    srv.sql("FLUSH BINARY LOGS")
    files = [f for f in srv.binlog_files()[:-1] if f.name >= first.name]
    flavor = srv.variant.flavor
    problems: list[str] = []
    from_files = _decode_files(srv, files)
    results: dict[str, Outcome] = {
        "files": compare(from_files, wl, flavor),
        "network": compare(loops.run(_decode_network(srv, first.name, wl)), wl, flavor),
    }
    for path, outcome in results.items():
        problems += [f"[{path}] {m}" for m in outcome.mismatches]
    if not problems:
        problems += _spark_executor(srv, files, from_files)
    expected = wl.counts()
    counted, complete = tool_counts(srv, files, wl.database)
    if counted != expected if complete else any(counted[op] > expected[op] for op in expected):
        problems.append(f"[binlog tool] rows per op {counted} != the workload's {expected}")
    if not problems:
        assert results["files"].compared > 0 or not any(expected.values())
        TOTALS["seeds"] += 1
        TOTALS["changes"] += sum(expected.values())
        TOTALS["values"] += results["files"].compared + results["network"].compared
        return []
    report = [f"{wl.describe()}", *problems[:20]]
    failing = results["files"].failing_columns | results["network"].failing_columns
    if only is None and failing:
        smaller = frozenset({"id", "rev", *failing})
        shrunk = _one_seed(srv, seed, smaller)
        if shrunk:
            report = ["shrunk to the columns " + ", ".join(sorted(smaller)) + ":", *shrunk]
    return report


@pytest.mark.parametrize("name", list(SERVERS))
def test_generated_tables_decode_as_select(
    mariadb_primary_factory: PrimaryFactory, name: str
) -> None:
    srv = mariadb_primary_factory(SERVERS[name][0])
    repl_user(srv)
    failures: dict[int, list[str]] = {}
    before = dict(TOTALS)
    for seed in _seeds(name):
        problems = _one_seed(srv, seed)
        if problems:
            failures[seed] = problems
    print(f"{name}: " + ", ".join(f"{TOTALS[k] - before[k]} {k}" for k in TOTALS))
    assert not failures, "\n\n".join(
        f"seed {seed}:\n" + "\n".join(lines) for seed, lines in failures.items()
    )
