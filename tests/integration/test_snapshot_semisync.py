"""Snapshot, then stream, as the primary's only semi-sync replica, on each flavour.

The primary waits for this client's ACK (a timeout of 20 s: a missing ACK would
hold a commit far longer than the test runs). Writers commit during the snapshot
and after it; a probe commits one row once the consumer holds its first reads.
For each ACK mode, in each snapshot mode of ``MODES``:

* replaying the reads and changes gives exactly ``SELECT *``, nothing twice
  (the mirror of the snapshot tests), and every commit was acknowledged in time
  (``Rpl_semi_sync_*_no_tx`` +0);
* "auto" and "manual": no ACK for the probe before its change is handed to the
  consumer: its COMMIT is seen waiting for the ACK and has not returned at any
  change before it (in consistent mode the probe comes after every read: its
  commit waits for the whole snapshot);
* "auto": a consumer that stops right after the probe's change, asking for
  nothing more, still ACKs it (the COMMIT returns);
* "manual": the COMMIT returns once the consumer calls ``ack()``;
* "receipt": the COMMIT returns while the consumer, in the middle of the
  snapshot, is not asking for anything.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pymysql
import pytest

import replica_client as rc
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import DatabaseServer
from tests import loops
from tests.integration.test_flavors_live import _semi
from tests.integration.test_snapshot import (
    _TABLES,
    SERVERS,
    _config,
    _diff,
    _Mirror,
    _seed_rows,
    _select_all,
    _server,
    _writer,
)

__all__: list[str] = []

#: The snapshot modes checked.
MODES = ("consistent", "chunked")
#: ms a commit waits for the ACK before the primary goes asynchronous.
_ACK_TIMEOUT_MS = 20_000
#: s the test waits for a commit it expects to return (well under the ACK timeout).
_COMMIT_WAIT = 8.0
#: The consumer's read after which the probe commits.
_PROBE_AT = 200


def _commit(srv: DatabaseServer, sql: str, conn_ids: list[int], done: threading.Event) -> None:
    """Run ``sql`` (autocommit) on a connection of its own; set ``done`` once it returned."""
    conn = pymysql.connect(
        host=srv.host, port=srv.port, user=srv.user, password=srv.password, autocommit=True
    )
    try:
        conn_ids.append(conn.thread_id())
        with conn.cursor() as cur:
            cur.execute(sql)
        done.set()
    finally:
        conn.close()


class _Probe:
    """One row committed in another thread: is its COMMIT waiting for the ACK, has it returned."""

    def __init__(self, srv: DatabaseServer, sql: str) -> None:
        self.srv = srv
        self.returned = threading.Event()
        self._ids: list[int] = []
        self._thread = threading.Thread(target=_commit, args=(srv, sql, self._ids, self.returned))

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def start(self) -> None:
        self._thread.start()

    def waiting_for_ack(self) -> bool:
        """Its statement runs while the primary waits for a semi-sync ACK (in its session,
        or, on MySQL, in the session leading the group commit it is in)."""
        if not self._ids:
            return False
        rows = self.srv.sql(
            "SELECT ID, STATE FROM information_schema.PROCESSLIST "
            "WHERE ID = %s OR STATE LIKE '%%semi-sync ACK%%'",
            (self._ids[0],),
        )
        running = any(row[0] == self._ids[0] for row in rows)
        return running and any("semi-sync ACK" in str(row[1] or "") for row in rows)

    async def wait(self, condition: Callable[[], bool | Awaitable[bool]], what: str) -> None:
        try:
            async with asyncio.timeout(_COMMIT_WAIT):
                while not await _result(condition()):
                    await asyncio.sleep(0.02)
        except TimeoutError:
            raise AssertionError(f"the probe's COMMIT {what}") from None

    def join(self) -> None:
        if self.started:
            self._thread.join()


async def _result(value: bool | Awaitable[bool]) -> bool:
    return value if isinstance(value, bool) else await value


async def _semi_sync_on(srv: DatabaseServer) -> None:
    """Switch the primary's semi-sync back ON (commits made with no semi-sync replica
    connected turned it asynchronous) with a replica of ours that ACKs, then close it."""
    async with rc.connect(_config(srv, start="now", semi_sync="on")) as stream:
        assert stream.semi_sync
        changes = stream.changes()
        async with asyncio.timeout(30):
            while _semi(srv, "clients") != "1":
                await asyncio.sleep(0.05)
            while _semi(srv, "status") != "ON":
                await asyncio.to_thread(srv.sql, "INSERT INTO snap.warm VALUES ()")
                async for _ in changes:
                    break


async def _consume(
    srv: DatabaseServer,
    config: rc.ReplicaConfig,
    ack_mode: str,
    writer: threading.Thread,
    stop: threading.Event,
    probe: _Probe,
) -> tuple[_Mirror, dict[str, Any]]:
    """Apply reads and changes until the ``snap.done`` marker, probing the ACKs on the way."""
    mirror = _Mirror()
    seen: dict[str, Any] = {"reads": 0, "gtids": set()}
    over = asyncio.Event()
    done = threading.Event()
    marker: asyncio.Task[None] | None = None
    manual = ack_mode == "manual"

    async def writers_then_marker() -> None:
        # Writers go on until the snapshot is over and a while after; then the marker.
        await over.wait()
        await asyncio.sleep(0.3)
        stop.set()
        await asyncio.to_thread(writer.join)
        await asyncio.to_thread(_commit, srv, "INSERT INTO snap.done VALUES (1)", [], done)

    try:
        async with asyncio.timeout(30), rc.connect(config) as stream:
            assert stream.semi_sync
            writer.start()
            marker = asyncio.create_task(writers_then_marker())
            async for change in stream.changes():
                if stream.snapshot_state is None:
                    over.set()
                if change.op != "read":
                    seen["gtids"].add(change.gtid)
                if change.schema != "snap":
                    continue
                if change.table == "done":
                    if manual:
                        await stream.ack()
                    await marker
                    return mirror, seen
                if change.table == "probe":
                    seen["probe_in_snapshot"] = stream.snapshot_state is not None
                    seen["reads_before_probe"] = seen["reads"]
                    await _probe_handed_out(stream, probe, ack_mode)
                    continue
                if ack_mode != "receipt" and probe.started and "probe_in_snapshot" not in seen:
                    # (a change before the probe's: the probe's ACK cannot have gone out)
                    assert not probe.returned.is_set(), (
                        "the probe's COMMIT returned before its change was handed out "
                        f"({change.op} of {change.table} handed out, snapshot "
                        f"{'over' if over.is_set() else 'running'})"
                    )
                mirror.apply(change)
                if change.op == "read":
                    seen["reads"] += 1
                    if seen["reads"] % 97 == 0:
                        await asyncio.sleep(0.01)  # a slow consumer: the writers overlap the reads
                    if seen["reads"] == _PROBE_AT:
                        await _probe_commits(probe, ack_mode)
                if manual:
                    await stream.ack()
    except TimeoutError:
        sessions = srv.sql(
            "SELECT USER, STATE, LEFT(INFO, 40) FROM information_schema.PROCESSLIST "
            "WHERE COMMAND NOT IN ('Sleep', 'Daemon') AND ID <> CONNECTION_ID()"
        )
        raise AssertionError(f"the stream stalled; the primary's sessions: {sessions}") from None
    raise AssertionError("the stream ended before the marker")


async def _probe_commits(probe: _Probe, ack_mode: str) -> None:
    """The probe commits while the consumer, in the middle of the snapshot, holds on."""
    probe.start()
    if ack_mode == "receipt":
        # ACKed on receipt: the primary need not wait for the consumer
        await probe.wait(probe.returned.is_set, "waited for the consumer (receipt)")
    else:
        await probe.wait(probe.waiting_for_ack, "is not waiting for an ACK")


async def _probe_handed_out(stream: rc.BinlogStream, probe: _Probe, ack_mode: str) -> None:
    """The consumer holds the probe's change and asks for nothing more."""
    if ack_mode == "auto":
        # the transaction whose last change was handed out is ACKed all the same
        await probe.wait(probe.returned.is_set, "did not return: its change was not ACKed")
    elif ack_mode == "manual":
        assert not probe.returned.is_set(), (
            "the probe's COMMIT returned before the consumer's ack() (an early ACK, "
            "or the primary stopped waiting for it)"
        )
        assert probe.waiting_for_ack()

        async def acked() -> bool:
            # (the end of the transaction whose last change was handed out, once it arrived)
            await stream.ack()
            return probe.returned.is_set()

        await probe.wait(acked, "did not return after ack()")


@pytest.mark.parametrize("ack_mode", ["auto", "manual", "receipt"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(SERVERS))
def test_snapshot_then_stream_acks_each_commit_once_handed_out(
    mariadb_primary_factory: PrimaryFactory, name: str, mode: str, ack_mode: str
) -> None:
    srv = _server(mariadb_primary_factory, name)
    _seed_rows(srv)
    srv.sql_many(
        [
            "CREATE TABLE snap.probe (k INT PRIMARY KEY)",
            "CREATE TABLE snap.warm (k INT AUTO_INCREMENT PRIMARY KEY)",
        ]
    )
    side = "master" if srv.flavor == "mariadb" else "source"
    variable = f"rpl_semi_sync_{side}_timeout"
    timeout = srv.sql(f"SELECT @@GLOBAL.{variable}")[0][0]
    stats: Counter[str] = Counter()
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(srv, stop, len(name) + len(mode), stats))
    probe = _Probe(srv, "INSERT INTO snap.probe VALUES (1)")
    try:
        loops.run(_semi_sync_on(srv))
        srv.sql(f"SET GLOBAL {variable} = {_ACK_TIMEOUT_MS}")
        yes, no = int(_semi(srv, "yes_tx")), int(_semi(srv, "no_tx"))
        config = _config(
            srv,
            snapshot=mode,
            snapshot_tables=_TABLES,
            snapshot_chunk_rows=150,
            semi_sync="on",
            ack_mode=ack_mode,
        )
        mirror, seen = loops.run(_consume(srv, config, ack_mode, writer, stop, probe))
        acked, async_commits = int(_semi(srv, "yes_tx")) - yes, int(_semi(srv, "no_tx")) - no
    finally:
        stop.set()
        if writer.is_alive() or (probe.started and not probe.returned.is_set()):
            # (a failed test: release the commits waiting for ACKs that will not come)
            srv.sql(f"SET GLOBAL rpl_semi_sync_{side}_enabled = OFF")
            srv.sql(f"SET GLOBAL rpl_semi_sync_{side}_enabled = ON")
        if writer.ident is not None:
            writer.join()
        probe.join()
        srv.sql(f"SET GLOBAL {variable} = {int(timeout)}")
    want = _select_all(srv)
    print(
        f"{name} {mode} {ack_mode}: writers {dict(stats)}; delivered {dict(mirror.counts)}; "
        f"probe after {seen['reads_before_probe']} reads, in the snapshot: "
        f"{seen['probe_in_snapshot']}; ACKed {acked}, async {async_commits}"
    )
    assert not mirror.problems, "\n".join(mirror.problems[:20])
    for table in _TABLES:
        assert mirror.rows[table] == want[table], _diff(mirror.rows[table], want[table])
    assert stats["transactions"] > 0
    if mode == "consistent":
        assert seen["reads_before_probe"] == mirror.counts["read"]
        assert not seen["probe_in_snapshot"]
    assert async_commits == 0, "commits went asynchronous: an ACK did not come in time"
    assert acked >= len(seen["gtids"]) > 0
    assert _semi(srv, "status") == "ON"
