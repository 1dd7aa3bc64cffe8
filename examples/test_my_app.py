"""An integration test of your own, written with the replica_client pytest plugin.

``pip install replica-client[test]`` registers the plugin; the fixtures start a
private MariaDB primary from the local install (or use Docker, or the server
in ``REPLICA_CLIENT_TEST_DSN``). Run it with ``pytest examples/test_my_app.py``.

The "application" here is one function that places an order; the test checks
what it wrote to the binlog, which is what a CDC consumer will see.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from replica_client import BinlogStream
from replica_client.testing import MariaDBServer
from replica_client.testing.pytest_plugin import take_changes

__all__ = ["place_order", "test_orders"]


def place_order(db: MariaDBServer, customer: str, total: str) -> None:
    """The code under test: writes an order and bumps the customer's counter."""
    db.sql_many(
        [
            "BEGIN",
            f"INSERT INTO myapp.orders (customer, total) VALUES ('{customer}', {total})",
            f"INSERT INTO myapp.customers VALUES ('{customer}', 1) "
            "ON DUPLICATE KEY UPDATE orders = orders + 1",
            "COMMIT",
        ]
    )


@pytest.fixture(scope="module")
def schema(mariadb_primary: MariaDBServer) -> None:
    mariadb_primary.sql_many(
        [
            "CREATE DATABASE IF NOT EXISTS myapp",
            "CREATE OR REPLACE TABLE myapp.orders "
            "(id INT AUTO_INCREMENT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(8,2))",
            "CREATE OR REPLACE TABLE myapp.customers (name VARCHAR(40) PRIMARY KEY, orders INT)",
        ]
    )


@pytest.mark.asyncio
async def test_orders(
    schema: None, mariadb_primary: MariaDBServer, binlog_stream: BinlogStream
) -> None:
    place_order(mariadb_primary, "ada", "12.50")
    place_order(mariadb_primary, "ada", "7.25")

    changes = await take_changes(binlog_stream, 4)

    assert [(c.op, c.table) for c in changes] == [
        ("insert", "orders"),
        ("insert", "customers"),
        ("insert", "orders"),
        ("update", "customers"),
    ]
    assert changes[0].after is not None and changes[0].after["total"] == Decimal("12.50")
    assert changes[3].before == {"name": "ada", "orders": 1}
    assert changes[3].after == {"name": "ada", "orders": 2}
    assert changes[0].gtid == changes[1].gtid != changes[2].gtid  # one transaction each
