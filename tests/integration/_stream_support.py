"""Shared helpers of the live-stream integration tests (tests/integration/test_stream_*.py)."""

from __future__ import annotations

import itertools
from typing import Any

import replica_client as rc
from replica_client.testing.server import MariaDBServer, ServerVariant

__all__ = ["DISRUPTIVE", "REPL_PASSWORD", "REPL_USER", "config_for", "next_server_id", "repl_user"]

REPL_USER = "rc_repl"
REPL_PASSWORD = "rc-repl-pw-9"
#: A primary of its own for tests that kill, restart or purge (others share the default one).
DISRUPTIVE = ServerVariant(extra_args=("--max-connections=201",))

_ids = itertools.count(5000)


def next_server_id() -> int:
    """A server_id no other replica of this test session uses."""
    return next(_ids)


def repl_user(server: MariaDBServer) -> None:
    """Create the replication account (idempotent)."""
    server.create_user(REPL_USER, REPL_PASSWORD)


def config_for(server: MariaDBServer, **options: Any) -> rc.ReplicaConfig:
    base: dict[str, Any] = {
        "host": server.host,
        "port": server.port,
        "user": REPL_USER,
        "password": REPL_PASSWORD,
        "server_id": next_server_id(),
        "heartbeat_period": 1.0,
        "connect_timeout": 20.0,
    }
    base.update(options)
    return rc.ReplicaConfig.from_kwargs(**base)
