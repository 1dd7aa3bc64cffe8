"""Every server flavour the harness offers, started for real: MariaDB 10.11 (the machine's
install), MariaDB 11.8 and MySQL 9.7 (provisioned prefixes).

Contract checked here, per flavour: the server starts with the flavour's binlog
settings and reports its version; it runs SQL; the binlog it writes is listed by
``binlog_files()`` and decoded by ``binlog_tool()`` of the same install; the
client tool of the same install logs in; ``create_user`` makes accounts that log
in with each auth plugin the flavour offers; restart keeps data and port, kill
leaves no process; a variant with TLS serves our certificate, and the binlog
options of the variant reach the server. No mocks, no skips: a flavour that
cannot be had fails.
"""

from __future__ import annotations

import dataclasses
import ssl
import subprocess
from pathlib import Path

import pymysql
import pytest

from replica_client.testing.errors import ServerStartError, ServerStateError
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import DatabaseServer, ServerVariant

from ._support import BINLOG_MAGIC, default_binlog_settings, process_gone, variables

__all__: list[str] = []

pytestmark = pytest.mark.integration

#: Flavour id -> (variant, the version it must report).
SERVERS = {
    "mariadb-10.11": (ServerVariant(), "10.11."),
    "mariadb-11.8": (ServerVariant(flavor="mariadb", version="11.8"), "11.8."),
    "mysql-9.7": (ServerVariant(flavor="mysql", version="9.7"), "9.7."),
}
#: Flavour id -> the auth plugins ``create_user`` must make working logins with.
PLUGINS = {
    "mariadb-10.11": ("mysql_native_password", "ed25519"),
    "mariadb-11.8": ("mysql_native_password", "ed25519", "parsec"),
    "mysql-9.7": ("caching_sha2_password",),
}


@pytest.fixture(params=list(SERVERS))
def flavor_id(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(flavor_id: str, mariadb_primary_factory: PrimaryFactory) -> DatabaseServer:
    return mariadb_primary_factory(SERVERS[flavor_id][0])


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    # The binlog tool prints row values in their column's own charset (latin1, sjis, ...),
    # so its output is not UTF-8 once other tests have written such rows on the server.
    return subprocess.run(
        argv, capture_output=True, text=True, errors="replace", check=False, timeout=120
    )


def test_starts_with_the_flavors_binlog_settings(server: DatabaseServer, flavor_id: str) -> None:
    variant, version = SERVERS[flavor_id]
    assert server.flavor == variant.flavor
    assert server.version.startswith(version), server.version
    assert ("MariaDB" in server.version) == (server.flavor == "mariadb")
    assert server.sql("SELECT VERSION()") == [(server.version,)]
    assert server.sql("SHOW DATABASES LIKE 'test'") == [("test",)]
    expected = default_binlog_settings(server)
    assert variables(server, *expected) == expected
    if server.flavor == "mysql":
        assert variables(
            server,
            "gtid_mode",
            "enforce_gtid_consistency",
            "rpl_semi_sync_source_enabled",
            "rpl_semi_sync_source_timeout",
            "binlog_rows_query_log_events",
        ) == {
            "gtid_mode": "ON",
            "enforce_gtid_consistency": "ON",
            "rpl_semi_sync_source_enabled": "ON",
            "rpl_semi_sync_source_timeout": "500",
            "binlog_rows_query_log_events": "ON",
        }
    else:
        assert variables(
            server,
            "rpl_semi_sync_master_enabled",
            "rpl_semi_sync_master_timeout",
            "binlog_annotate_row_events",
        ) == {
            "rpl_semi_sync_master_enabled": "ON",
            "rpl_semi_sync_master_timeout": "500",
            "binlog_annotate_row_events": "ON",
        }


def test_binlog_is_listed_and_decoded_by_the_same_install(
    server: DatabaseServer, flavor_id: str
) -> None:
    table = f"flavor_binlog_{flavor_id.replace('-', '_').replace('.', '_')}"
    file, position = server.binlog_position()
    assert file.startswith(server.binlog_basename + ".") and position > 0
    server.sql_many(
        [
            f"CREATE TABLE IF NOT EXISTS test.{table} (id INT PRIMARY KEY, v VARCHAR(40))",
            f"REPLACE INTO test.{table} VALUES (7, 'flavor-row-marker')",
            "FLUSH BINARY LOGS",
        ]
    )
    files = server.binlog_files()
    assert [f.name for f in files] == [str(r[0]) for r in server.sql("SHOW BINARY LOGS")]
    assert file in [f.name for f in files]
    assert all(f.parent == server.datadir and f.read_bytes()[:4] == BINLOG_MAGIC for f in files)

    tool = server.binlog_tool()
    binary = next(
        i for i, arg in enumerate(tool) if arg.endswith(("mariadb-binlog", "mysqlbinlog"))
    )
    assert tool[binary + 1] == "--no-defaults"
    version = run([*tool, "--version"])
    assert version.returncode == 0, version.stderr
    if SERVERS[flavor_id][0].provisioned:
        # the prefix's own tool, through the prefix's own loader
        assert server.install.prefix is not None
        assert tool[0] == str(server.install.prefix.loader)
        assert tool[binary].startswith(str(server.install.prefix.root))
        assert SERVERS[flavor_id][1] in version.stdout, version.stdout

    decoded = run([*tool, "--verbose", "--base64-output=DECODE-ROWS", *map(str, files)])
    assert decoded.returncode == 0, decoded.stderr
    assert f"### INSERT INTO `test`.`{table}`" in decoded.stdout
    assert "'flavor-row-marker'" in decoded.stdout


def test_client_tool_of_the_same_install_logs_in(server: DatabaseServer) -> None:
    tool = server.client_tool()
    assert tool[next(i for i, a in enumerate(tool) if a.endswith(("mariadb", "mysql"))) + 1] == (
        "--no-defaults"
    )
    result = run(
        [
            *tool,
            f"--host={server.host}",
            f"--port={server.port}",
            f"--user={server.user}",
            f"--password={server.password}",
            "--batch",
            "--skip-column-names",
            "--execute=SELECT VERSION()",
        ]
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == server.version


def login_with_client_tool(server: DatabaseServer, user: str, password: str) -> str:
    """``SELECT CURRENT_USER()`` through the install's own client over TCP."""
    result = run(
        [
            *server.client_tool(),
            f"--host={server.host}",
            f"--port={server.port}",
            f"--user={user}",
            f"--password={password}",
            "--batch",
            "--skip-column-names",
            "--execute=SELECT CURRENT_USER(); SHOW BINARY LOGS",
        ]
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_create_user_logs_in_with_every_plugin(server: DatabaseServer, flavor_id: str) -> None:
    for plugin in PLUGINS[flavor_id]:
        name = f"flavor_{plugin[:8]}"
        dsn = server.create_user(name, "s3cret!pw", plugin=plugin)
        assert dsn.endswith(f"@{server.host}:{server.port}")
        assert {
            str(r[0]) for r in server.sql("SELECT plugin FROM mysql.user WHERE user = %s", (name,))
        } == {plugin}
        if plugin == "parsec":  # PyMySQL has no parsec: the install's own client does
            assert f"{name}@%" in login_with_client_tool(server, name, "s3cret!pw")
            continue
        conn = pymysql.connect(host=server.host, port=server.port, user=name, password="s3cret!pw")
        try:
            with conn.cursor() as cursor:
                cursor.execute("SHOW GRANTS")
                grants = " ".join(str(r[0]) for r in cursor.fetchall())
                cursor.execute("SHOW BINARY LOGS")  # the replica's grants suffice
        finally:
            conn.close()
        assert "REPLICATION SLAVE" in grants
        assert ("BINLOG MONITOR" in grants) == (server.flavor == "mariadb")


def test_auth_plugins_that_a_flavor_lacks_fail_clearly(server: DatabaseServer) -> None:
    missing = "mysql_native_password" if server.flavor == "mysql" else "no_such_auth"
    with pytest.raises(ServerStateError, match=missing):
        server.create_user("flavor_missing", "pw", plugin=missing)


def test_restart_keeps_data_and_port_and_kill_leaves_no_process(
    flavor_id: str, tmp_path: Path
) -> None:
    with DatabaseServer(SERVERS[flavor_id][0], base_dir=tmp_path / "srv") as server:
        assert server.datadir == tmp_path / "srv" / "data"
        port, first_pid = server.port, server.pid
        assert first_pid is not None
        server.sql_many(
            [
                "CREATE TABLE test.harness_restart (id INT PRIMARY KEY)",
                "INSERT INTO test.harness_restart VALUES (1)",
            ]
        )
        server.restart()
        assert server.port == port and server.pid != first_pid
        assert process_gone(first_pid)
        server.sql("INSERT INTO test.harness_restart VALUES (2)")
        server.restart(kill=True)
        assert server.port == port
        server.sql("INSERT INTO test.harness_restart VALUES (3)")
        killed = server.pid
        assert killed is not None
        server.kill()
        assert not server.running and process_gone(killed)
        server.start()
        assert server.port == port
        assert server.sql("SELECT id FROM test.harness_restart ORDER BY id") == [(1,), (2,), (3,)]
        assert len(server.binlog_files()) == 4
        last = server.pid
        assert last is not None
    assert process_gone(last)
    assert not server.running


def test_start_failure_names_the_flag_and_carries_the_log(flavor_id: str, tmp_path: Path) -> None:
    variant = dataclasses.replace(SERVERS[flavor_id][0], extra_args=("--no-such-option-xyz",))
    server = DatabaseServer(variant, base_dir=tmp_path)
    with pytest.raises(ServerStartError) as info:
        server.start()
    assert "no-such-option-xyz" in str(info.value)
    assert "error log" in str(info.value)
    assert not server.running
    server.close()


def test_variant_options_and_tls_reach_every_flavor(
    flavor_id: str, mariadb_primary_factory: PrimaryFactory
) -> None:
    base = SERVERS[flavor_id][0]
    variant = dataclasses.replace(
        base,
        row_image="MINIMAL",
        row_metadata="MINIMAL",
        checksum="NONE",
        tls=True,
        transaction_compression=base.flavor == "mysql",
        extra_args=("--max-connections=77",),
    )
    server = mariadb_primary_factory(variant)
    assert variables(
        server, "binlog_row_image", "binlog_row_metadata", "binlog_checksum", "max_connections"
    ) == {
        "binlog_row_image": "MINIMAL",
        "binlog_row_metadata": "MINIMAL",
        "binlog_checksum": "NONE",
        "max_connections": "77",
    }
    if server.flavor == "mysql":
        assert variables(server, "binlog_transaction_compression") == {
            "binlog_transaction_compression": "ON"
        }
    assert server.ca_cert is not None and server.server_cert is not None
    assert server.sql("SELECT @@ssl_cert") == [(str(server.server_cert),)]
    context = ssl.create_default_context(cafile=str(server.ca_cert))
    for host in ("127.0.0.1", "localhost"):
        # our CA verifies the server's certificate under both names
        conn = pymysql.connect(
            host=host, port=server.port, user=server.user, password=server.password, ssl=context
        )
        try:
            with conn.cursor() as cursor:
                cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
                row = cursor.fetchone()
        finally:
            conn.close()
        assert row is not None and str(row[1]).startswith("TLS"), row


def test_mariadb_11_8_compresses_and_encrypts_its_binlog(
    mariadb_primary_factory: PrimaryFactory,
) -> None:
    server = mariadb_primary_factory(
        ServerVariant(flavor="mariadb", version="11.8", compress=True, encrypt=True)
    )
    assert variables(server, "encrypt_binlog", "log_bin_compress") == {
        "encrypt_binlog": "ON",
        "log_bin_compress": "ON",
    }
    server.sql_many(
        [
            "CREATE TABLE IF NOT EXISTS test.flavor_secret (id INT PRIMARY KEY, v TEXT)",
            "REPLACE INTO test.flavor_secret VALUES (1, 'flavor-secret-marker')",
            "FLUSH BINARY LOGS",
        ]
    )
    data = b"".join(f.read_bytes() for f in server.binlog_files())
    assert b"flavor-secret-marker" not in data and b"flavor_secret" not in data
