"""Real replication for the failover tests: primary A and replica B (MASTER_USE_GTID=slave_pos)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pymysql

from replica_client.testing.server import MariaDBServer, ServerVariant
from tests.integration._stream_support import REPL_PASSWORD, REPL_USER

__all__ = ["TABLE", "pair", "promote", "status", "wait", "wait_caught_up", "writer"]

TABLE = "rc_failover.t"


@contextmanager
def pair(
    semi_sync: bool, replica_version: str | None = None
) -> Iterator[tuple[MariaDBServer, MariaDBServer]]:
    """A primary of the machine's MariaDB and a replica of it (``replica_version``: 11.8)."""
    primary = MariaDBServer(ServerVariant(extra_args=("--gtid-domain-id=0",)))
    replica = MariaDBServer(
        ServerVariant(
            flavor="mariadb",
            version=replica_version,
            extra_args=(
                "--server-id=2",
                "--log-slave-updates=ON",
                f"--rpl-semi-sync-slave-enabled={'ON' if semi_sync else 'OFF'}",
                "--read-only=ON",
            ),
        )
    )
    with primary, replica:
        primary.create_user(REPL_USER, REPL_PASSWORD)
        if semi_sync:
            primary.sql("SET GLOBAL rpl_semi_sync_master_timeout = 5000")
            primary.sql("SET GLOBAL rpl_semi_sync_master_wait_point = 'AFTER_SYNC'")
        replica.sql(
            # (11.4+ replicas ask for TLS by default; these primaries have none)
            "CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER='root', "
            "MASTER_PASSWORD=%s, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, "
            "MASTER_SSL=0",
            (primary.host, primary.port, primary.password),
        )
        replica.sql("START SLAVE")
        primary.sql("CREATE DATABASE IF NOT EXISTS rc_failover")
        primary.sql(f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, note VARCHAR(20))")
        wait_caught_up(replica, primary)
        if semi_sync:
            wait(lambda: status(primary, "Rpl_semi_sync_master_clients") == 1)
        yield primary, replica


def status(srv: MariaDBServer, name: str) -> int:
    return int(srv.sql("SHOW GLOBAL STATUS LIKE %s", (name,))[0][1])


def wait(cond: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def wait_caught_up(replica: MariaDBServer, primary: MariaDBServer) -> None:
    target = str(primary.sql("SELECT @@gtid_binlog_pos")[0][0])
    replica.sql("SELECT MASTER_GTID_WAIT(%s, 30)", (target,))


def promote(replica: MariaDBServer) -> None:
    # Apply everything the relay log holds, then stop replicating and take writes.
    wait(lambda: _slave_status(replica)["Slave_IO_Running"] != "Yes")
    wait(
        lambda: "read all relay log"
        in str(_slave_status(replica)["Slave_SQL_Running_State"] or "")
    )
    replica.sql("STOP SLAVE")
    replica.sql("RESET SLAVE ALL")
    replica.sql("SET GLOBAL read_only = 0")


def _slave_status(srv: MariaDBServer) -> dict[str, Any]:
    conn = pymysql.connect(
        unix_socket=srv.socket, user="root", password=srv.password, autocommit=True
    )
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SHOW SLAVE STATUS")
            row = cur.fetchone()
    finally:
        conn.close()
    return dict(row or {})


def writer(srv: MariaDBServer, ids: range, done: list[int], stop: threading.Event) -> None:
    """Commit one row per transaction; note each id whose COMMIT returned."""
    try:
        conn = pymysql.connect(
            host=srv.host, port=srv.port, user="root", password=srv.password, autocommit=True
        )
    except pymysql.err.Error:
        return
    try:
        with conn.cursor() as cur:
            for i in ids:
                if stop.is_set():
                    return
                cur.execute(f"INSERT INTO {TABLE} VALUES (%s, 'row')", (i,))
                done.append(i)
    except pymysql.err.Error:
        return  # the primary was killed
    finally:
        conn.close()


