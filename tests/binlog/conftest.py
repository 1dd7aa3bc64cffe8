"""Fixtures of the live tests in ``tests/binlog`` (see ``tests/binlog_live.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

from replica_client.testing.server import MariaDBServer
from tests.binlog_live import SCHEMA, connect


@pytest.fixture
def conn(mariadb_primary: MariaDBServer) -> Iterator[pymysql.connections.Connection[Any]]:
    mariadb_primary.sql_many(
        [
            f"CREATE DATABASE IF NOT EXISTS {SCHEMA}",
            f"DROP TABLE IF EXISTS {SCHEMA}.t, {SCHEMA}.a, {SCHEMA}.b",
            f"CREATE TABLE {SCHEMA}.t (id INT AUTO_INCREMENT PRIMARY KEY, v DOUBLE, "
            "s VARCHAR(40), ts TIMESTAMP(6) NULL, dt DATETIME(6) NULL, vb VARBINARY(100))",
        ]
    )
    connection = connect(mariadb_primary)
    try:
        yield connection
    finally:
        connection.close()
