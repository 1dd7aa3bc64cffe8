"""Helpers of the product tests: run the CLI and the examples as a user would."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from replica_client.testing.server import MariaDBServer

__all__ = [
    "REPO",
    "cli_command",
    "connection_args",
    "fresh_database",
    "gtid_now",
    "next_server_id",
    "run_cli",
]

REPO = Path(__file__).resolve().parents[2]
_ids = itertools.count(30000)


def next_server_id() -> int:
    """A server_id no other replica of this test session uses."""
    return next(_ids)


def cli_command() -> list[str]:
    """The installed ``replica-client`` console script (as the README runs it)."""
    beside = Path(sys.executable).parent / "replica-client"
    found = str(beside) if beside.exists() else shutil.which("replica-client")
    assert found, "the replica-client console script is not installed (pip install -e .)"
    return [found]


def run_cli(
    *args: str, password: str | None = None, timeout: float = 120, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """Run ``replica-client ARGS``; the password goes through the environment."""
    env = dict(os.environ)
    env.pop("REPLICA_CLIENT_PASSWORD", None)
    if password is not None:
        env["REPLICA_CLIENT_PASSWORD"] = password
    return subprocess.run(
        [*cli_command(), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
        **kwargs,
    )


def connection_args(server: MariaDBServer) -> list[str]:
    return [
        "--host",
        server.host,
        "--port",
        str(server.port),
        "--user",
        server.user,
        "--server-id",
        str(next_server_id()),
    ]


def fresh_database(server: MariaDBServer, prefix: str) -> str:
    """A new, empty database with a unique name."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {name}")
    return name


def gtid_now(server: MariaDBServer) -> str:
    return str(server.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0])
