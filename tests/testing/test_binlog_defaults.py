"""Each flavour started in its own binlog defaults, and in the recommended setting.

Contract checked here, per server (MariaDB 10.11 of the machine, MariaDB 11.8 and
MySQL 9.7 provisioned): ``ServerVariant.server_defaults()`` starts a server whose
command line names neither ``--binlog-format`` nor ``--binlog-row-metadata`` (nor
the annotations of row events), and the server then reports exactly its own
defaults: MariaDB ``MIXED`` and ``NO_LOG``, MySQL ``ROW`` and ``MINIMAL``. The
default variant reports the recommended ROW, FULL metadata and image, CRC32, and
``binlog_format`` reaches the server for the other formats. No mocks, no skips.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import DatabaseServer, ServerVariant

__all__: list[str] = []

#: Server id -> (flavor, version, the version it reports, its binlog_format, binlog_row_metadata).
SERVERS = {
    "mariadb-10.11": ("mariadb", None, "10.11.", "MIXED", "NO_LOG"),
    "mariadb-11.8": ("mariadb", "11.8", "11.8.", "MIXED", "NO_LOG"),
    "mysql-9.7": ("mysql", "9.7", "9.7.", "ROW", "MINIMAL"),
}
SETTINGS = (
    "SELECT @@global.binlog_format, @@global.binlog_row_metadata, "
    "@@global.binlog_row_image, @@global.binlog_checksum"
)


def settings(server: DatabaseServer) -> tuple[str, ...]:
    return tuple(str(value) for value in server.sql(SETTINGS)[0])


def command_line(server: DatabaseServer) -> list[str]:
    """The running server's own argv, as the kernel has it."""
    assert server.pid is not None
    return Path(f"/proc/{server.pid}/cmdline").read_bytes().decode().split("\0")


@pytest.mark.integration
@pytest.mark.parametrize("server_id", list(SERVERS))
def test_server_defaults_variant_reports_the_servers_own_defaults(
    server_id: str, mariadb_primary_factory: PrimaryFactory
) -> None:
    flavor, version, reported, binlog_format, row_metadata = SERVERS[server_id]
    variant = ServerVariant.server_defaults(flavor=flavor, version=version)
    assert variant.is_server_defaults
    server = mariadb_primary_factory(variant)
    assert server.version.startswith(reported), server.version
    assert settings(server) == (binlog_format, row_metadata, "FULL", "CRC32")
    argv = command_line(server)
    assert "--log-bin=mysql-bin" in argv and "--server-id=1" in argv
    assert not [
        arg
        for arg in argv
        if arg.startswith(
            (
                "--binlog-format",
                "--binlog-row-metadata",
                "--binlog-annotate-row-events",
                "--binlog-rows-query-log-events",
            )
        )
    ], argv
    annotations = (
        "SELECT @@global.binlog_annotate_row_events"
        if flavor == "mariadb"
        else "SELECT @@global.binlog_rows_query_log_events"
    )
    # the servers' own defaults: MariaDB annotates row events, MySQL does not
    assert server.sql(annotations) == [(1 if flavor == "mariadb" else 0,)]
    server.sql_many(
        [
            "CREATE TABLE IF NOT EXISTS test.defaults_probe (id INT PRIMARY KEY)",
            "REPLACE INTO test.defaults_probe VALUES (1)",
        ]
    )
    assert server.sql("SELECT id FROM test.defaults_probe") == [(1,)]


@pytest.mark.integration
@pytest.mark.parametrize("server_id", list(SERVERS))
def test_recommended_variant_reports_row_and_full_metadata(
    server_id: str, mariadb_primary_factory: PrimaryFactory
) -> None:
    flavor, version, reported, _, _ = SERVERS[server_id]
    variant = ServerVariant(flavor=flavor, version=version)
    assert not variant.is_server_defaults
    server = mariadb_primary_factory(variant)
    assert server.version.startswith(reported), server.version
    assert settings(server) == ("ROW", "FULL", "FULL", "CRC32")


@pytest.mark.integration
@pytest.mark.parametrize("server_id", list(SERVERS))
@pytest.mark.parametrize("binlog_format", ["MIXED", "STATEMENT"])
def test_binlog_format_reaches_every_server(
    server_id: str, binlog_format: str, mariadb_primary_factory: PrimaryFactory
) -> None:
    flavor, version, _, _, _ = SERVERS[server_id]
    server = mariadb_primary_factory(
        ServerVariant(flavor=flavor, version=version, binlog_format=binlog_format.lower())
    )
    assert settings(server) == (binlog_format, "FULL", "FULL", "CRC32")
