"""One decoder run per process: ``python3 -m benchmarks.runners NAME JSON-ARGS``.

The parent (``peers.py``) starts one process per decoder and per run, so that
CPU time and peak RSS (``os.wait4``) belong to that decoder alone. The child
reads the binlog range it is given to the end, counts events and rows (every
row decoded: peers that decode lazily are made to), and prints one JSON line:
``{"events": n, "rows": n, "wall": s, "cpu": s, "hwm_kb": n}`` where wall and
CPU time cover the read loop only (connect and registration included; the
runner's modules, ``IMPORTS``, are imported before the clock starts) and
``hwm_kb`` is the process's peak RSS.

Runners:

``rc_changes``    ``replica_client.connect(..., blocking=False)``, ``async for change in
                  stream.changes()`` (dicts by column name: what users consume)
``rc_changes_file`` ``replica_client.iter_changes(open_binlog(files))``
``rc_net``        ``replica_client.connect(..., blocking=False)``, ``async for event``
                  (row tuples)
``rc_file``       ``replica_client.open_binlog(files)`` (row tuples)
``pymysqlrepl``   python-mysql-replication ``BinLogStreamReader`` (rows forced)
``asyncmy``       ``asyncmy.replication.BinLogStream`` (rows forced; stopped at
                  the ROTATE out of the range: non-blocking, it reconnects at EOF)
``raw``           log in, COM_BINLOG_DUMP, frame packets until EOF: nothing decoded
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["RUNNERS", "main", "peak_rss_kb"]

Args = dict[str, Any]
Result = tuple[int, int]  # events, rows


def _rc_file(args: Args) -> Result:
    import replica_client as rc

    events = rows = 0
    with rc.open_binlog(args["paths"]) as stream:
        for event in stream:
            events += 1
            r = getattr(event, "rows", None)
            if r is not None:
                rows += len(r)
    return events, rows


def _rc_changes_file(args: Args) -> Result:
    import replica_client as rc

    rows = 0
    with rc.open_binlog(args["paths"]) as stream:
        for change in rc.iter_changes(stream):
            _ = change.before, change.after
            rows += 1
    return 0, rows


def _rc_connect(args: Args) -> Any:
    """``replica_client.connect(...)`` from the start of the range, non-blocking."""
    from replica_client.aio import connect
    from replica_client.position import FilePos

    return connect(
        host=args["host"],
        port=args["port"],
        user=args["user"],
        password=args["password"],
        server_id=args["server_id"],
        start=FilePos(args["first"], 4),
        blocking=False,
    )


def _rc_changes(args: Args) -> Result:
    async def run() -> Result:
        rows = 0
        async with _rc_connect(args) as stream:
            async for change in stream.changes():
                _ = change.before, change.after
                rows += 1
        return 0, rows

    return asyncio.run(run())


def _rc_net(args: Args) -> Result:
    async def run() -> Result:
        events = rows = 0
        async with _rc_connect(args) as stream:
            async for event in stream:
                events += 1
                r = getattr(event, "rows", None)
                if r is not None:
                    rows += len(r)
        return events, rows

    return asyncio.run(run())


def _pymysqlrepl(args: Args) -> Result:
    # Peers are imported by name: they ship no type information.
    row_event = importlib.import_module("pymysqlreplication.row_event")
    rows_event, update_event = row_event.RowsEvent, row_event.UpdateRowsEvent
    stream = importlib.import_module("pymysqlreplication").BinLogStreamReader(
        connection_settings={
            "host": args["host"],
            "port": args["port"],
            "user": args["user"],
            "password": args["password"],
        },
        server_id=args["server_id"],
        log_file=args["first"],
        log_pos=4,
        resume_stream=True,
        blocking=False,
        enable_logging=False,
    )
    events = rows = 0
    try:
        for event in stream:
            events += 1
            if isinstance(event, rows_event):
                if isinstance(event, update_event):
                    for row in event.rows:
                        _ = row["before_values"], row["after_values"]
                        rows += 1
                else:
                    for row in event.rows:
                        _ = row["values"]
                        rows += 1
    finally:
        stream.close()
    return events, rows


def _asyncmy(args: Args) -> Result:
    connect = importlib.import_module("asyncmy").connect
    binlog_stream = importlib.import_module("asyncmy.replication").BinLogStream
    rotate_event = importlib.import_module("asyncmy.replication.events").RotateEvent
    row_events = importlib.import_module("asyncmy.replication.row_events")
    rows_event, update_event = row_events.RowsEvent, row_events.UpdateRowsEvent

    async def run() -> Result:
        kwargs = {
            "host": args["host"],
            "port": args["port"],
            "user": args["user"],
            "password": args["password"],
        }
        conn = await connect(**kwargs)
        ctl = await connect(**kwargs)
        stream = binlog_stream(
            conn,
            ctl,
            server_id=args["server_id"],
            master_log_file=args["first"],
            master_log_position=4,
            resume_stream=True,
            blocking=False,
        )
        events = rows = 0
        last = args["last"]
        async for event in stream:
            events += 1
            # Non-blocking, asyncmy reconnects at EOF and reads again: stop at
            # the ROTATE that leaves the range instead.
            if isinstance(event, rotate_event) and event.next_binlog > last:
                break
            if isinstance(event, rows_event):
                if isinstance(event, update_event):
                    for row in event.rows:
                        _ = row["before_values"], row["after_values"]
                        rows += 1
                else:
                    for row in event.rows:
                        _ = row["values"]
                        rows += 1
        await stream.close()
        ctl.close()
        return events, rows

    return asyncio.run(run())


_COM_BINLOG_DUMP = 0x12
_HEADER = struct.Struct("<I")


def _raw(args: Args) -> Result:
    """Frame packets only: the cost of getting the bytes, the ceiling for any decoder."""
    import pymysql

    conn = pymysql.connect(
        host=args["host"],
        port=args["port"],
        user=args["user"],
        password=args["password"],
        autocommit=True,
    )
    with conn.cursor() as cur:
        cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
        cur.execute("SET @mariadb_slave_capability = 4")
    name = args["first"].encode()
    # COM_BINLOG_DUMP: position u32 | flags u16 (1 = non-blocking) | server_id u32 | file
    body = struct.pack("<BIHI", _COM_BINLOG_DUMP, 4, 1, args["server_id"]) + name
    sock: socket.socket = conn._sock  # the authenticated socket
    sock.sendall(struct.pack("<I", len(body))[:3] + b"\0" + body)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    have = pos = 0
    packets = 0
    unpack = _HEADER.unpack_from
    while True:
        # frame every whole packet in the buffer
        while have - pos >= 4:
            length = unpack(buf, pos)[0] & 0xFFFFFF
            if have - pos < 4 + length:
                break
            status = buf[pos + 4]
            if status == 0xFE and length < 9:
                sock.close()
                return packets, 0
            if status == 0xFF:
                raise RuntimeError(bytes(buf[pos + 7 : pos + 4 + length]).decode(errors="replace"))
            packets += 1
            pos += 4 + length
        if pos:
            buf[: have - pos] = buf[pos:have]
            have -= pos
            pos = 0
        if have == len(buf):
            view.release()
            buf.extend(bytes(len(buf)))
            view = memoryview(buf)
        n = sock.recv_into(view[have:])
        if n == 0:
            raise RuntimeError("connection closed before EOF")
        have += n


def run_child(module: str, *args: str) -> dict[str, Any]:
    """Run ``python -m module --child args...`` from the repository root in a fresh
    process (its own peak RSS); the JSON object its last line prints."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-m", module, "--child", *args],
        env=env,
        cwd=root,
        check=True,
        stdout=subprocess.PIPE,
    ).stdout
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


def peak_rss_kb(pid: int | str = "self") -> int:
    """VmHWM of a process: its peak RSS since exec (``ru_maxrss`` of a forked
    child also counts the parent's memory at fork time)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


#: Modules each runner needs, imported before the clock starts (interpreter and
#: import time are not decoding time; ``python3 -X importtime`` measures those).
IMPORTS: dict[str, tuple[str, ...]] = {
    "rc_changes": ("replica_client", "replica_client.aio", "replica_client.position"),
    "rc_changes_file": ("replica_client",),
    "rc_net": ("replica_client", "replica_client.aio", "replica_client.position"),
    "rc_file": ("replica_client",),
    "pymysqlrepl": ("pymysqlreplication", "pymysqlreplication.row_event"),
    "asyncmy": (
        "asyncmy",
        "asyncmy.replication",
        "asyncmy.replication.events",
        "asyncmy.replication.row_events",
    ),
    "raw": ("pymysql",),
}

RUNNERS: dict[str, Callable[[Args], Result]] = {
    "rc_changes": _rc_changes,
    "rc_changes_file": _rc_changes_file,
    "rc_net": _rc_net,
    "rc_file": _rc_file,
    "pymysqlrepl": _pymysqlrepl,
    "asyncmy": _asyncmy,
    "raw": _raw,
}


def main(argv: list[str]) -> int:
    name, raw_args = argv[0], argv[1]
    args: Args = json.loads(raw_args)
    runner = RUNNERS[name]
    for module in IMPORTS[name]:
        importlib.import_module(module)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    events, rows = runner(args)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    result = {"events": events, "rows": rows, "wall": wall, "cpu": cpu, "hwm_kb": peak_rss_kb()}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
