"""Live latency and semi-sync commit latency on a private primary (loopback).

Usage (from the repository root)::

    python3 -m benchmarks.latency              # 2,000 commits per measurement
    python3 -m benchmarks.latency --commits 500
    python3 -m benchmarks.latency --server mariadb-11.8    # or mysql-9.7
    python3 -m benchmarks.latency --style changes          # a changes() consumer
    python3 -m benchmarks.latency --loop uvloop            # every ACKer on uvloop's loop
    python3 -m benchmarks.latency --pause-ms 2             # semi-sync commits 2 ms apart

1. **Live latency**: ``replica_client.connect(..., blocking=True)`` follows the
   primary; a writer process commits single-row transactions one at a time
   (every 2 ms) and notes ``time.perf_counter_ns()`` (CLOCK_MONOTONIC, one
   clock for every process) just before each ``INSERT`` (autocommit); the
   replica notes the same clock when the transaction's XID event comes out of
   its ``async for``. Latency = XID delivered - commit sent; it includes the
   commit's own execution on the primary.
2. **Semi-sync**: with ``rpl_semi_sync_master_enabled=ON`` every commit waits
   for a replica's ACK. The writer measures each commit's round trip while
   the ACKing replica is (a) ``replica_client`` (``semi_sync="on"``: decodes
   every event, ACKs in ``auto`` mode, then in ``receipt`` mode; its loop is an
   ``async for event in stream`` or, with ``--style changes``, an ``async for
   change in stream.changes()``) and (b) a bare client that asks for the same
   events (the same dump flags), only frames packets and ACKs the ones the
   primary asks for, in a thread blocked in ``recv``; and (c) that client's
   loop in an asyncio protocol on the benchmark's event loop, as replica_client
   reads: the part of (a)'s latency any asyncio ACKer pays. The four ACKers
   take turns (``--rounds``, the order turning each round), so that drift
   over the run does not favour one of them. ``Rpl_semi_sync_master_no_tx`` must not move:
   a commit that timed out waiting for its ACK would count there. The writer
   pauses ``--pause-ms`` (0.5 ms) between commits: at that pace (about 1,500
   commits/s) replica_client's decoding of each transaction shares the two
   cores with the primary and the writer; the bare client decodes nothing.

``--loop uvloop`` runs the event loop of (a), (c) and the live measurement on
uvloop instead of asyncio's own loop (the ``[test]`` extra installs it).

Prints p50/p90/p99/max and the ratios of (a) and (c) to (b); ``--json`` writes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import secrets
import socket
import statistics
import struct
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar, cast

import pymysql

from replica_client.aio import connect
from replica_client.binlog.events import WriteRowsEvent, XidEvent
from replica_client.testing.server import MariaDBServer, ServerVariant

from . import workload

__all__ = ["main"]

_T = TypeVar("_T")

_DDL = "CREATE TABLE bench.lat (id INT PRIMARY KEY, note VARCHAR(40), at DATETIME(6))"


def _connect(dsn: dict[str, Any]) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(autocommit=True, **dsn)


def _writer(
    dsn: dict[str, Any], table: str, first: int, count: int, pause: float, out: Any
) -> None:
    """Commit ``count`` single-row transactions; send back (id, t_sent_ns, commit_ns)."""
    conn = _connect(dsn)
    stamps: list[tuple[int, int, int]] = []
    with conn.cursor() as cur:
        for i in range(first, first + count):
            t0 = time.perf_counter_ns()
            cur.execute(f"INSERT INTO {table} VALUES ({i}, 'latency probe', NOW(6))")
            t1 = time.perf_counter_ns()
            stamps.append((i, t0, t1 - t0))
            time.sleep(pause)
    conn.close()
    out.send(stamps)


def _spawn_writer(dsn: dict[str, Any], first: int, count: int, pause: float) -> tuple[Any, Any]:
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_writer, args=(dsn, "bench.lat", first, count, pause, send))
    proc.start()
    return proc, recv


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _stats(values_ms: list[float]) -> dict[str, float]:
    return {
        "n": len(values_ms),
        "p50": statistics.median(values_ms),
        "p90": _pct(values_ms, 0.90),
        "p99": _pct(values_ms, 0.99),
        "max": max(values_ms),
    }


async def _live(args: dict[str, Any], dsn: dict[str, Any], first: int, count: int) -> list[float]:
    seen: dict[int, int] = {}
    pending: int | None = None
    last = first + count - 1
    async with connect(
        host=args["host"],
        port=args["port"],
        user=args["user"],
        password=args["password"],
        server_id=args["server_id"],
        start="now",
        blocking=True,
    ) as stream:
        proc, recv = _spawn_writer(dsn, first, count, 0.002)
        async for event in stream:
            if isinstance(event, WriteRowsEvent) and event.table.table == "lat":
                pending = int(event.rows[0][0])
            elif isinstance(event, XidEvent) and pending is not None:
                seen[pending] = time.perf_counter_ns()
                if pending == last:
                    break
                pending = None
    stamps = recv.recv()
    proc.join()
    return [(seen[i] - t0) / 1e6 for i, t0, _ in stamps if i in seen]


def _commit_latencies(dsn: dict[str, Any], first: int, count: int, pause: float) -> list[float]:
    """Commit ``count`` single-row transactions, ``pause`` s apart; their round trips (ms)."""
    proc, recv = _spawn_writer(dsn, first, count, pause)
    stamps = recv.recv()
    proc.join()
    return [commit_ns / 1e6 for _, _, commit_ns in stamps]


async def _rc_acking(
    args: dict[str, Any], stop: asyncio.Event, ready: asyncio.Event, ack_mode: str, style: str
) -> None:
    async with connect(
        host=args["host"],
        port=args["port"],
        user=args["user"],
        password=args["password"],
        server_id=args["server_id"],
        start="now",
        blocking=True,
        semi_sync="on",
        ack_mode=ack_mode,
        heartbeat_period=0.2,
    ) as stream:
        ready.set()
        # A plain ``async for``, as an application consumes the stream; the
        # heartbeats (every 0.2 s while idle) let the event loop notice ``stop``.
        if style == "changes":
            changes = stream.changes()
            while not stop.is_set():
                try:
                    async with asyncio.timeout(0.2):
                        await anext(changes)
                except TimeoutError:
                    continue
        else:
            async for _ in stream:
                if stop.is_set():
                    break


def _bare_dump(args: dict[str, Any]) -> tuple[pymysql.connections.Connection[Any], bytes]:
    """Log in, ask for semi-sync and the dump from the primary's current end.

    Returns the connection (its socket carries the dump) and the binlog file name.
    """
    # plain TCP, as replica_client's default (tls="off"): pymysql would use TLS
    # wherever the server offers it (MariaDB 11.8, MySQL)
    conn = pymysql.connect(
        host=args["host"],
        port=args["port"],
        user=args["user"],
        password=args["password"],
        ssl_disabled=True,
    )
    with conn.cursor() as cur:
        cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
        if args["mariadb"]:
            cur.execute("SET @mariadb_slave_capability = 4")
            cur.execute("SET @rpl_semi_sync_slave = 1")
            cur.execute("SHOW MASTER STATUS")
        else:
            cur.execute("SET @rpl_semi_sync_replica = 1")
            cur.execute("SHOW BINARY LOG STATUS")
        row = cur.fetchone()
    assert row is not None
    name, position = str(row[0]), int(row[1])
    # the dump flags replica_client sends, so that both get the same events:
    # MariaDB's ANNOTATE_ROWS (flag 2) is on by default (``annotate_rows``)
    flags = 2 if args["mariadb"] else 0
    body = struct.pack("<BIHI", 0x12, position, flags, args["server_id"]) + name.encode()
    conn._sock.sendall(struct.pack("<I", len(body))[:3] + b"\0" + body)
    return conn, name.encode()


def _bare_acks(buf: bytearray, current: bytes) -> tuple[list[bytes], int, bytes]:
    """Frame the whole packets at the start of ``buf``; ACK every event that asks for it.

    Returns the ACK packets to send, the bytes framed, and the binlog file then.
    """
    acks: list[bytes] = []
    pos = 0
    while len(buf) - pos >= 4:
        length = int.from_bytes(buf[pos : pos + 3], "little")
        if len(buf) - pos < 4 + length:
            break
        payload = buf[pos + 4 : pos + 4 + length]
        pos += 4 + length
        # status 0x00 | semi-sync magic 0xEF | flags | event
        if len(payload) < 3 or payload[0] != 0 or payload[1] != 0xEF:
            continue
        event = payload[3:]
        if len(event) >= 19 and event[4] == 4:  # ROTATE: remember the file
            current = bytes(event[19 + 8 : len(event) - 4])
        if payload[2] & 1:
            log_pos = int.from_bytes(event[13:17], "little")
            ack = b"\xef" + struct.pack("<Q", log_pos) + current
            acks.append(struct.pack("<I", len(ack))[:3] + b"\0" + ack)
    return acks, pos, current


def _bare_acker(args: dict[str, Any], stop: threading.Event, ready: threading.Event) -> None:
    """Log in, ask for semi-sync, frame packets, ACK every event that asks for it."""
    conn, current = _bare_dump(args)
    sock: socket.socket = conn._sock
    sock.settimeout(0.2)
    buf = bytearray()
    ready.set()
    while not stop.is_set():
        try:
            chunk = sock.recv(1 << 16)
        except TimeoutError:
            continue
        if not chunk:
            break
        buf += chunk
        acks, pos, current = _bare_acks(buf, current)
        for ack in acks:
            sock.sendall(ack)
        del buf[:pos]
    sock.close()


class _AsyncioAcker(asyncio.Protocol):
    """The bare client's loop in an asyncio protocol: what any asyncio ACKer costs."""

    def __init__(self, current: bytes) -> None:
        self._buf = bytearray()
        self._current = current
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        acks, pos, self._current = _bare_acks(buf, self._current)
        assert self._transport is not None
        for ack in acks:
            self._transport.write(ack)
        del buf[:pos]


async def _asyncio_bare_round(
    srv: MariaDBServer, args: dict[str, Any], dsn: dict[str, Any], base: int, n: int, pause: float
) -> tuple[list[float], dict[str, int]]:
    conn, current = _bare_dump(args)
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_accepted_socket(
        lambda: _AsyncioAcker(current), sock=conn._sock
    )
    await asyncio.sleep(0.3)
    before = _semi_sync_status(srv)
    ms = await asyncio.to_thread(_commit_latencies, dsn, base, n, pause)
    after = _semi_sync_status(srv)
    transport.abort()
    return ms, _delta(before, after)


#: The semi-sync ACKers compared: the bare client (in a thread, and its loop in an
#: asyncio protocol), replica_client in "auto" and "receipt".
_ACKERS = ("semi_sync_bare", "semi_sync_bare_asyncio", "semi_sync_rc", "semi_sync_rc_receipt")


def _bare_round(
    srv: MariaDBServer, args: dict[str, Any], dsn: dict[str, Any], base: int, n: int, pause: float
) -> tuple[list[float], dict[str, int]]:
    stop, ready = threading.Event(), threading.Event()
    bare = threading.Thread(target=_bare_acker, args=(args, stop, ready), daemon=True)
    bare.start()
    ready.wait(10)
    time.sleep(0.3)
    before = _semi_sync_status(srv)
    ms = _commit_latencies(dsn, base, n, pause)
    after = _semi_sync_status(srv)
    stop.set()
    bare.join()
    return ms, _delta(before, after)


async def _rc_round(
    srv: MariaDBServer,
    args: dict[str, Any],
    dsn: dict[str, Any],
    base: int,
    n: int,
    pause: float,
    ack_mode: str,
    style: str,
) -> tuple[list[float], dict[str, int]]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(_rc_acking(args, stop, ready, ack_mode, style))
    await asyncio.wait_for(ready.wait(), 10)
    await asyncio.sleep(0.3)
    before = _semi_sync_status(srv)
    ms = await asyncio.to_thread(_commit_latencies, dsn, base, n, pause)
    after = _semi_sync_status(srv)
    stop.set()
    await task
    return ms, _delta(before, after)


_SERVERS = {
    "mariadb": ServerVariant(extra_args=("--rpl-semi-sync-master-timeout=2000",)),
    "mariadb-11.8": ServerVariant(
        flavor="mariadb", version="11.8", extra_args=("--rpl-semi-sync-master-timeout=2000",)
    ),
    "mysql-9.7": ServerVariant(
        flavor="mysql", version="9.7", extra_args=("--rpl-semi-sync-source-timeout=2000",)
    ),
}


def _semi_sync_status(srv: MariaDBServer) -> dict[str, int]:
    rows = srv.sql(f"SHOW GLOBAL STATUS LIKE '{_semi_prefix(srv)}%'")
    # one set of names whatever the flavour: yes_tx, no_tx, ...
    return {str(k)[len(_semi_prefix(srv)) :]: int(v) for k, v in rows if str(v).isdigit()}


def _semi_prefix(srv: MariaDBServer) -> str:
    return "Rpl_semi_sync_master_" if srv.flavor == "mariadb" else "Rpl_semi_sync_source_"


def _set_semi_sync(srv: MariaDBServer, on: bool) -> None:
    name = (
        "rpl_semi_sync_master_enabled"
        if srv.flavor == "mariadb"
        else "rpl_semi_sync_source_enabled"
    )
    srv.sql(f"SET GLOBAL {name} = {'ON' if on else 'OFF'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--server", choices=sorted(_SERVERS), default="mariadb")
    parser.add_argument("--style", choices=["events", "changes"], default="events")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument(
        "--pause-ms", type=float, default=0.5, help="the semi-sync writer's pause between commits"
    )
    parser.add_argument(
        "--rounds", type=int, default=4, help="semi-sync rounds per ACKer, interleaved"
    )
    parser.add_argument("--json", type=Path)
    opts = parser.parse_args(argv)
    n = opts.commits
    srv = MariaDBServer(_SERVERS[opts.server])
    srv.start()
    results: dict[str, Any] = {"server": srv.version, "style": opts.style, "loop": opts.loop}
    run = _runner(opts.loop)
    pause = opts.pause_ms / 1000
    results["pause_ms"] = opts.pause_ms
    try:
        password = secrets.token_hex(8)
        srv.create_user(workload.BENCH_USER, password)
        srv.sql("CREATE DATABASE IF NOT EXISTS bench")
        srv.sql(_DDL)
        dsn = {"host": srv.host, "port": srv.port, "user": srv.user, "password": srv.password}
        args = {
            "host": srv.host,
            "port": srv.port,
            "user": workload.BENCH_USER,
            "password": password,
            "mariadb": srv.flavor == "mariadb",
        }
        # 1. live latency, semi-sync off
        _set_semi_sync(srv, False)
        live = run(_live({**args, "server_id": 201}, dsn, 0, n))
        results["live_ms"] = _stats(live)
        # 2. semi-sync commit latency: the bare ACKer and replica_client in both
        # ACK modes, in interleaved rounds (the order turning each round) so that
        # drift over the run does not favour one of them
        _set_semi_sync(srv, True)
        samples: dict[str, list[float]] = {key: [] for key in _ACKERS}
        status: dict[str, dict[str, int]] = {key: {"yes_tx": 0, "no_tx": 0} for key in _ACKERS}
        rounds = max(1, opts.rounds)
        per_round = max(1, n // rounds)
        for r in range(rounds):
            for k in range(len(_ACKERS)):
                key = _ACKERS[(r + k) % len(_ACKERS)]
                sid = 202 + 10 * r + k
                base = 100_000 * (1 + r) + 10_000 * k
                if key == "semi_sync_bare":
                    ms, delta = _bare_round(
                        srv, {**args, "server_id": sid}, dsn, base, per_round, pause
                    )
                elif key == "semi_sync_bare_asyncio":
                    ms, delta = run(
                        _asyncio_bare_round(
                            srv, {**args, "server_id": sid}, dsn, base, per_round, pause
                        )
                    )
                else:
                    ack_mode = "auto" if key == "semi_sync_rc" else "receipt"
                    ms, delta = run(
                        _rc_round(
                            srv,
                            {**args, "server_id": sid},
                            dsn,
                            base,
                            per_round,
                            pause,
                            ack_mode,
                            opts.style,
                        )
                    )
                samples[key] += ms
                for name in status[key]:
                    status[key][name] += delta[name]
        for key in _ACKERS:
            results[f"{key}_ms"] = _stats(samples[key])
            results[f"{key}_status"] = status[key]
        _set_semi_sync(srv, False)
        results["async_commit_ms"] = _stats(_commit_latencies(dsn, 30_000, n, pause))
    finally:
        srv.close()
    ratio = results["semi_sync_rc_ms"]["p50"] / results["semi_sync_bare_ms"]["p50"]
    ratio99 = results["semi_sync_rc_ms"]["p99"] / results["semi_sync_bare_ms"]["p99"]
    results["semi_sync_ratio_p50"] = ratio
    results["semi_sync_ratio_p99"] = ratio99
    receipt = results["semi_sync_rc_receipt_ms"]["p50"] / results["semi_sync_bare_ms"]["p50"]
    receipt99 = results["semi_sync_rc_receipt_ms"]["p99"] / results["semi_sync_bare_ms"]["p99"]
    results["semi_sync_receipt_ratio_p50"] = receipt
    results["semi_sync_receipt_ratio_p99"] = receipt99
    floor = results["semi_sync_bare_asyncio_ms"]["p50"] / results["semi_sync_bare_ms"]["p50"]
    floor99 = results["semi_sync_bare_asyncio_ms"]["p99"] / results["semi_sync_bare_ms"]["p99"]
    results["semi_sync_asyncio_ratio_p50"] = floor
    results["semi_sync_asyncio_ratio_p99"] = floor99
    lines = [
        "| measurement (ms) | p50 | p90 | p99 | max |",
        "|---|---:|---:|---:|---:|",
    ]
    for key, label in (
        ("live_ms", "commit sent -> XID out of `async for` (replica_client)"),
        ("async_commit_ms", "commit, semi-sync off"),
        ("semi_sync_bare_ms", "commit, semi-sync, bare framing+ACK client"),
        ("semi_sync_bare_asyncio_ms", "commit, semi-sync, the bare client's loop in asyncio"),
        ("semi_sync_rc_ms", "commit, semi-sync, replica_client ACKing (ack_mode auto)"),
        ("semi_sync_rc_receipt_ms", "commit, semi-sync, replica_client ACKing (ack_mode receipt)"),
    ):
        s = results[key]
        lines.append(
            f"| {label} | {s['p50']:.3f} | {s['p90']:.3f} | {s['p99']:.3f} | {s['max']:.3f} |"
        )
    print("\n".join(lines))
    print(
        f"\nsemi-sync commit latency, replica_client / bare: ack_mode auto p50 {ratio:.2f}x, "
        f"p99 {ratio99:.2f}x; ack_mode receipt p50 {receipt:.2f}x, p99 {receipt99:.2f}x"
        f"\n(the bare client's loop in asyncio / bare: p50 {floor:.2f}x, p99 {floor99:.2f}x)"
    )
    print(
        f"semi-sync txns acknowledged/timed out: bare {results['semi_sync_bare_status']}, "
        f"bare in asyncio {results['semi_sync_bare_asyncio_status']}, "
        f"replica_client auto {results['semi_sync_rc_status']}, "
        f"receipt {results['semi_sync_rc_receipt_status']}"
    )
    if opts.json:
        opts.json.write_text(json.dumps(results, indent=2))
    return 0


def _runner(loop: str) -> Callable[[Coroutine[Any, Any, _T]], _T]:
    """``asyncio.run`` on the event loop asked for."""
    if loop == "asyncio":
        return asyncio.run
    import uvloop

    def run(coro: Coroutine[Any, Any, _T]) -> _T:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro)

    return run


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in ("yes_tx", "no_tx")}


if __name__ == "__main__":
    sys.exit(main())
