"""``replica-client demo``: decoded changes on screen from a throwaway primary.

Starts a private MariaDB primary from the machine's own install (the same
launcher the test suite uses) or, on a machine without ``mariadbd`` but with
Docker, the ``primary`` service of the project's ``docker-compose.yml``;
connects to it as a replica from "now", writes a few sample transactions of
different kinds (a multi-row INSERT, a transaction touching two tables, an
UPDATE of ENUM/SET columns, a DELETE), prints each change as it streams in,
then stops the primary and removes its files (``docker compose down -v``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .jsonvalues import change_envelope

__all__ = ["ComposePrimary", "find_compose_file", "run_demo"]

_COMPOSE_PROJECT = "replica-client-demo"

_SAMPLE = [
    "CREATE DATABASE IF NOT EXISTS shop",
    "CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(50), email VARCHAR(100))",
    "CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, customer_id INT, "
    "total DECIMAL(10,2), status ENUM('new','paid','shipped'), tags SET('gift','express'), "
    "created DATETIME(3))",
]


def _transactions(rows: int) -> list[list[str]]:
    customers = ", ".join(f"({i}, 'Customer {i}', 'c{i}@example.com')" for i in range(1, rows + 1))
    orders = ", ".join(
        f"({1 + i % rows}, {10 * i + 0.99:.2f}, 'new', 'gift', '2026-01-0{1 + i % 9} 10:00:00.123')"
        for i in range(1, rows + 1)
    )
    return [
        [f"INSERT INTO shop.customers VALUES {customers}"],
        [
            "BEGIN",
            "INSERT INTO shop.orders (customer_id, total, status, tags, created) VALUES " + orders,
            "UPDATE shop.customers SET email = 'vip@example.com' WHERE id = 1",
            "COMMIT",
        ],
        ["UPDATE shop.orders SET status = 'paid', tags = 'gift,express' WHERE id <= 2"],
        ["DELETE FROM shop.orders WHERE id = 3"],
    ]


async def _stream(srv: Any, expected: int, out: Any) -> int:
    from .aio import connect

    seen = 0
    async with connect(
        host=srv.host,
        port=srv.port,
        user=srv.user,
        password=srv.password,
        server_id=4242,
        start="now",
        blocking=True,
        semi_sync="auto",
        heartbeat_period=1.0,
    ) as stream:
        loop = asyncio.get_running_loop()
        writer = loop.run_in_executor(None, _write_samples, srv, expected)
        changes = stream.changes()
        while seen < expected:
            change = await asyncio.wait_for(changes.__anext__(), timeout=30)
            seen += 1
            env = change_envelope(change)
            src = env["source"]
            out.write(
                f"{change.op:<6} {change.schema}.{change.table:<10} gtid={src['gtid']:<8} "
                f"before={json.dumps(env['before'], ensure_ascii=False)} "
                f"after={json.dumps(env['after'], ensure_ascii=False)}\n"
            )
            out.flush()
        await writer
        out.write(f"-- {seen} row changes decoded from {stream.metrics.events} binlog events\n")
    return seen


def _write_samples(srv: Any, _expected: int) -> None:
    for tx in _transactions(_rows_for(_expected)):
        srv.sql_many(tx)


def _rows_for(expected: int) -> int:
    # expected = rows (customers) + rows (orders) + 1 + 2 + 1
    return (expected - 4) // 2


def find_compose_file() -> Path | None:
    """The project's ``docker-compose.yml``: in the current directory or the source tree."""
    for directory in (Path.cwd(), Path(__file__).resolve().parent.parent):
        candidate = directory / "docker-compose.yml"
        if candidate.is_file():
            return candidate
    return None


def _docker_compose() -> list[str] | None:
    """``docker compose`` (or ``docker-compose``) when a Docker engine answers."""
    docker = shutil.which("docker")
    if docker is not None:
        info = subprocess.run([docker, "info"], capture_output=True, check=False, timeout=30)
        if info.returncode == 0:
            return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy is not None else None


class ComposePrimary:
    """The ``primary`` service of ``docker-compose.yml`` as a throwaway demo server.

    Same attributes as the private server the demo uses: ``host``, ``port``,
    ``user``, ``password``, ``sql_many()``; ``close()`` runs ``down -v``.
    """

    host = "127.0.0.1"
    port = 3307
    user = "root"

    def __init__(self, compose: Sequence[str], compose_file: Path) -> None:
        self._cmd = [*compose, "-f", str(compose_file), "-p", _COMPOSE_PROJECT]
        self.password = "rootpass"  # the demo service's own, from docker-compose.yml
        self._conn: Any = None

    def __repr__(self) -> str:
        return f"<ComposePrimary {self.host}:{self.port}>"

    def start(self) -> None:
        subprocess.run([*self._cmd, "up", "-d", "--wait", "primary"], check=True, timeout=600)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.sql_many(["SELECT 1"])
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def sql_many(self, statements: Sequence[str]) -> None:
        import pymysql

        if self._conn is None:
            self._conn = pymysql.connect(
                host=self.host,
                port=self.port,
                user=self.user,
                password=self.password,
                autocommit=True,
                charset="utf8mb4",
            )
        with self._conn.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        subprocess.run([*self._cmd, "down", "-v"], check=False, timeout=300)


def _server(backend: str) -> tuple[Any, str]:
    from .testing.server import MariaDBServer, ServerVariant, find_mariadbd

    if backend == "local" or (backend == "auto" and find_mariadbd() is not None):
        return MariaDBServer(ServerVariant()), "a private MariaDB primary from the local install"
    compose = _docker_compose()
    compose_file = find_compose_file()
    if compose is not None and compose_file is not None:
        return ComposePrimary(compose, compose_file), f"docker compose ({compose_file})"
    if backend == "docker":
        raise ConfigError(
            "demo --backend docker needs a running Docker engine and docker-compose.yml "
            "in the current directory"
        )
    raise ConfigError(
        "the demo needs MariaDB: install mariadb-server (mariadbd is looked up on PATH and "
        "in /usr/sbin) or run it from a checkout on a machine with Docker"
    )


def run_demo(rows: int = 5, out: Any = None, backend: str = "auto") -> int:
    """Run the demo; returns the exit code.

    ``backend``: "local" (mariadbd from the machine's install), "docker"
    (docker compose), or "auto" (local when mariadbd exists, else docker).
    """
    out = out if out is not None else sys.stdout
    rows = max(rows, 3)
    expected = 2 * rows + 4
    srv, where = _server(backend)
    out.write(f"-- starting {where} ...\n")
    out.flush()
    try:
        srv.start()
        out.write(f"-- primary on {srv.host}:{srv.port}; writing sample transactions\n")
        srv.sql_many(["DROP DATABASE IF EXISTS shop", *_SAMPLE])
        asyncio.run(_stream(srv, expected, out))
    finally:
        srv.close()
        out.write("-- primary stopped\n")
        out.flush()
    return 0
