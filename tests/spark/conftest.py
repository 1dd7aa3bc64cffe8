"""One local SparkSession for the Spark tests, and a primary of their own.

The session is created once (``local[2]``, two shuffle partitions, no UI):
starting the JVM takes most of the module's wall time. Executors run the
interpreter that runs the tests (``PYSPARK_PYTHON``), with the source tree on
``PYTHONPATH`` so that Spark's lookup of ``pyspark_*`` modules finds the
top-level registration module even under an editable install.

A test that uses the session needs Java: it is marked ``integration`` here,
by fixture use, like the tests that use the plugin's server fixtures, so that
``pytest -m "not integration"`` runs on a machine without Java.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from replica_client.spark import register
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from replica_client.testing.spark_cluster import python_env

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[2]

#: A server of its own: the binlog then holds only these tests' transactions.
#: (8192 is the default row-event size; the flag only makes the variant distinct.)
SPARK_VARIANT = ServerVariant(extra_args=("--binlog-row-event-max-size=8192",))
#: A second one for the test that purges binlogs.
PURGE_VARIANT = ServerVariant(extra_args=("--binlog-row-event-max-size=16384",))

#: Replica ids, 20 apart: a stream's tasks register with the (``maxPartitions``,
#: 16 by default) ids after its own.
_server_ids = itertools.count(60_001, 20)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the SparkSession (Java) ``integration``."""
    for item in items:
        # (a parameter named "spark" is not the fixture)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "spark" in getattr(item, "fixturenames", ()) and "spark" not in params:
            item.add_marker(pytest.mark.integration)


#: The settings of every test session, the local one and the cluster's
#: (tests/spark/cluster_driver.py).
SESSION_CONF: dict[str, Any] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    "spark.ui.showConsoleProgress": "false",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ.update(python_env(ROOT))
    session = (
        SparkSession.builder.master("local[2]")
        .appName("replica_client-tests")
        .config(map=SESSION_CONF)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_primary(mariadb_primary_factory: PrimaryFactory) -> MariaDBServer:
    return mariadb_primary_factory(SPARK_VARIANT)


@pytest.fixture(scope="session")
def purge_primary(mariadb_primary_factory: PrimaryFactory) -> MariaDBServer:
    return mariadb_primary_factory(PURGE_VARIANT)


@pytest.fixture(params=["mariadb", "mysql-9.7"])
def flavor_primary(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> MariaDBServer:
    """The Spark tests' MariaDB primary, then a MySQL 9.7 one: a test run on both flavours."""
    if request.param == "mariadb":
        primary: MariaDBServer = request.getfixturevalue("spark_primary")
        return primary
    return mariadb_primary_factory(ServerVariant(flavor="mysql", version="9.7"))


@pytest.fixture
def server_id() -> int:
    """A replica server_id no other test uses (a duplicate id kicks the other replica)."""
    return next(_server_ids)


def stream_options(srv: MariaDBServer, server_id: int, **extra: Any) -> dict[str, Any]:
    """Connection options of the source for ``srv``."""
    opts: dict[str, Any] = {
        "host": srv.host,
        "port": srv.port,
        "user": srv.user,
        "password": srv.password,
        "server_id": server_id,
    }
    opts.update(extra)
    return opts
