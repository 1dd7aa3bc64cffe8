"""Tests of the test harness itself, against real private servers of the machine's MariaDB.

Contract checked here: the private primary starts with binlog on (ROW, FULL
image and metadata, CRC32, annotations), semi-sync primary enabled; the
variants really set their server variables; ``binlog_files()`` agrees with
``SHOW BINARY LOGS`` and the disk; restarts keep data and port; start failures
carry the server's error log; no server outlives its owner. No mocks, no skips.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pymysql
import pytest

from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import (
    ExternalServer,
    MariaDBServer,
    ServerStartError,
    ServerStateError,
    ServerVariant,
    parse_dsn,
)

from ._support import BINLOG_MAGIC, default_binlog_settings, process_gone, variables

__all__: list[str] = []


def test_variant_is_frozen_hashable_and_validated() -> None:
    default = ServerVariant()
    assert default == ServerVariant(
        flavor="mariadb",
        version=None,
        row_metadata="FULL",
        row_image="FULL",
        checksum="CRC32",
        compress=False,
        encrypt=False,
        tls=False,
        transaction_compression=False,
        extra_args=(),
    )
    assert hash(ServerVariant(row_image="minimal")) == hash(ServerVariant(row_image="MINIMAL"))
    assert ServerVariant(extra_args=["--a"]).extra_args == ("--a",)  # type: ignore[arg-type]
    assert default.label == "mariadb"
    assert (
        ServerVariant(row_image="MINIMAL", compress=True).label
        == "mariadb:row_image=MINIMAL,compress"
    )
    with pytest.raises(ValueError, match="row_image"):
        ServerVariant(row_image="PARTIAL")
    with pytest.raises(AttributeError):
        default.compress = True  # type: ignore[misc]


def test_primary_accepts_connections(mariadb_primary: MariaDBServer) -> None:
    assert mariadb_primary.sql("SELECT 1") == [(1,)]
    assert "MariaDB" in str(mariadb_primary.sql("SELECT VERSION()")[0][0])
    assert mariadb_primary.sql("SHOW DATABASES LIKE 'test'") == [("test",)]
    assert mariadb_primary.host == "127.0.0.1"
    assert mariadb_primary.port not in (0, 3306)
    assert mariadb_primary.user == "root"
    assert mariadb_primary.server_id == 1
    assert mariadb_primary.binlog_basename == "mysql-bin"
    assert parse_dsn(mariadb_primary.dsn) == (
        mariadb_primary.host,
        mariadb_primary.port,
        mariadb_primary.user,
        mariadb_primary.password,
    )
    # the DSN works over TCP with the generated root password
    conn = pymysql.connect(
        host=mariadb_primary.host,
        port=mariadb_primary.port,
        user=mariadb_primary.user,
        password=mariadb_primary.password,
    )
    conn.close()


def test_binlog_is_row_full_crc32(mariadb_primary: MariaDBServer) -> None:
    expected = {**default_binlog_settings(mariadb_primary), "binlog_annotate_row_events": "ON"}
    assert variables(mariadb_primary, *expected) == expected


def test_semi_sync_primary_enabled(mariadb_primary: MariaDBServer) -> None:
    assert variables(
        mariadb_primary, "rpl_semi_sync_master_enabled", "rpl_semi_sync_master_timeout"
    ) == {"rpl_semi_sync_master_enabled": "ON", "rpl_semi_sync_master_timeout": "500"}
    # no semi-sync replica is attached: a commit must not wait for the 10 s default
    mariadb_primary.sql("CREATE TABLE IF NOT EXISTS test.harness_semisync (id INT PRIMARY KEY)")
    began = time.monotonic()
    mariadb_primary.sql("REPLACE INTO test.harness_semisync VALUES (1)")
    assert time.monotonic() - began < 5


def test_binlog_files_match_show_binary_logs(mariadb_primary: MariaDBServer) -> None:
    mariadb_primary.sql_many(
        [
            "CREATE TABLE IF NOT EXISTS test.harness_files (id INT PRIMARY KEY, v TEXT)",
            "REPLACE INTO test.harness_files VALUES (1, 'harness-plaintext-marker')",
            "FLUSH BINARY LOGS",
        ]
    )
    shown = mariadb_primary.sql("SHOW BINARY LOGS")
    files = mariadb_primary.binlog_files()
    assert len(files) >= 2
    assert [f.name for f in files] == [str(row[0]) for row in shown]
    assert files == sorted(files)
    for path, row in zip(files, shown, strict=True):
        assert path.is_absolute()
        assert path.parent == mariadb_primary.datadir
        assert path.read_bytes()[:4] == BINLOG_MAGIC
        if path != files[-1]:  # closed files have their final size
            assert path.stat().st_size == int(row[1])
    assert any(b"harness-plaintext-marker" in f.read_bytes() for f in files)


def test_factory_caches_one_server_per_variant(
    mariadb_primary: MariaDBServer, mariadb_primary_factory: PrimaryFactory
) -> None:
    assert mariadb_primary_factory(ServerVariant()) is mariadb_primary
    minimal = ServerVariant(row_image="MINIMAL", row_metadata="MINIMAL")
    server = mariadb_primary_factory(minimal)
    assert mariadb_primary_factory(ServerVariant(row_image="minimal", row_metadata="minimal")) is (
        server
    )
    assert server is not mariadb_primary
    assert server.port != mariadb_primary.port
    assert variables(server, "binlog_row_image", "binlog_row_metadata") == {
        "binlog_row_image": "MINIMAL",
        "binlog_row_metadata": "MINIMAL",
    }


def test_checksum_none_variant(mariadb_primary_factory: PrimaryFactory) -> None:
    server = mariadb_primary_factory(ServerVariant(checksum="NONE"))
    assert variables(server, "binlog_checksum") == {"binlog_checksum": "NONE"}


def test_compress_variant(mariadb_primary_factory: PrimaryFactory) -> None:
    server = mariadb_primary_factory(ServerVariant(compress=True))
    assert variables(server, "log_bin_compress", "log_bin_compress_min_len") == {
        "log_bin_compress": "ON",
        "log_bin_compress_min_len": "10",
    }


def test_encrypt_variant(mariadb_primary_factory: PrimaryFactory) -> None:
    server = mariadb_primary_factory(ServerVariant(encrypt=True))
    assert variables(server, "encrypt_binlog") == {"encrypt_binlog": "ON"}
    assert server.sql(
        "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS "
        "WHERE PLUGIN_NAME = 'FILE_KEY_MANAGEMENT'"
    ) == [("ACTIVE",)]
    assert server.key_file is not None
    lines = server.key_file.read_text().splitlines()
    assert [line.split(";")[0] for line in lines] == ["1", "2"]
    assert all(len(line.split(";")[1]) == 64 for line in lines)
    bytes.fromhex(lines[0].split(";")[1])
    server.sql_many(
        [
            "CREATE TABLE IF NOT EXISTS test.harness_secret (id INT PRIMARY KEY, v TEXT)",
            "REPLACE INTO test.harness_secret VALUES (1, 'harness-secret-marker')",
            "FLUSH BINARY LOGS",
        ]
    )
    data = b"".join(f.read_bytes() for f in server.binlog_files())
    assert b"harness-secret-marker" not in data
    assert b"harness_secret" not in data


def test_tls_variant(mariadb_primary_factory: PrimaryFactory) -> None:
    server = mariadb_primary_factory(ServerVariant(tls=True))
    assert server.ca_cert is not None and server.ca_cert.exists()
    assert server.server_cert is not None and server.server_key is not None
    context = ssl.create_default_context(cafile=str(server.ca_cert))
    for host in ("127.0.0.1", "localhost"):
        # the certificate verifies for both names the harness promises
        conn = pymysql.connect(
            host=host,
            port=server.port,
            user=server.user,
            password=server.password,
            ssl=context,
        )
        try:
            with conn.cursor() as cursor:
                cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
                row = cursor.fetchone()
            assert row is not None and str(row[1]).startswith("TLS")
        finally:
            conn.close()


@pytest.mark.parametrize("plugin", ["mysql_native_password", "ed25519"])
def test_create_user(mariadb_primary: MariaDBServer, plugin: str) -> None:
    name = f"harness_{plugin[:6]}"
    dsn = mariadb_primary.create_user(name, "s3cret!", plugin=plugin)
    assert parse_dsn(dsn) == (mariadb_primary.host, mariadb_primary.port, name, "s3cret!")
    plugins = {
        str(r[0])
        for r in mariadb_primary.sql("SELECT plugin FROM mysql.user WHERE user = %s", (name,))
    }
    assert plugins == {plugin}
    conn = pymysql.connect(
        host=mariadb_primary.host, port=mariadb_primary.port, user=name, password="s3cret!"
    )
    try:
        with conn.cursor() as cursor:
            cursor.execute("SHOW GRANTS")
            grants = " ".join(str(r[0]) for r in cursor.fetchall())
            cursor.execute("SHOW BINARY LOGS")  # needs BINLOG MONITOR
    finally:
        conn.close()
    assert "REPLICATION SLAVE" in grants


@pytest.mark.integration
def test_stop_reaps_the_process(tmp_path: Path) -> None:
    server = MariaDBServer(base_dir=tmp_path)
    server.start()
    assert server.last_start_seconds is not None and server.last_start_seconds < 30
    pid = server.pid
    assert pid is not None
    server.stop()
    assert process_gone(pid)
    # the binlogs stay readable after a stop, for file-reader tests
    assert (tmp_path / "data" / "mysql-bin.000001").read_bytes()[:4] == BINLOG_MAGIC
    server.start()  # and it can start again on the same datadir
    assert server.sql("SELECT 1") == [(1,)]
    server.kill()
    assert process_gone(pid)
    server.close()


@pytest.mark.integration
def test_start_failure_reports_the_error_log(tmp_path: Path) -> None:
    server = MariaDBServer(ServerVariant(extra_args=("--no-such-option-xyz",)), base_dir=tmp_path)
    with pytest.raises(ServerStartError) as info:
        server.start()
    message = str(info.value)
    assert "no-such-option-xyz" in message
    assert "error log" in message
    assert not server.running
    server.close()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("flavor", "version"),
    [("mariadb", ""), ("mariadb", "11.8"), ("mysql", "9.7")],
    ids=["mariadb", "mariadb-11.8", "mysql-9.7"],
)
def test_server_dies_with_its_owner(tmp_path: Path, flavor: str, version: str) -> None:
    """A test process killed hard must not leave a running server behind (the
    provisioned flavours run through their prefix's loader: the same process)."""
    script = (
        "import os, sys\n"
        "from replica_client.testing.server import MariaDBServer, ServerVariant\n"
        "variant = ServerVariant(flavor=sys.argv[2], version=sys.argv[3] or None)\n"
        "s = MariaDBServer(variant, base_dir=os.path.join(sys.argv[1], 'srv'))\n"
        "s.start()\n"
        "print(s.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), flavor, version],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        # os._exit skips the exit hooks: keep the child's datadir template in tmp_path
        env={
            **os.environ,
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
            "TMPDIR": str(tmp_path),
        },
    )
    pid = int(result.stdout.split()[0])
    deadline = time.monotonic() + 60
    while not process_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process_gone(pid)


def test_external_server_wraps_a_dsn(mariadb_primary: MariaDBServer) -> None:
    external = ExternalServer(mariadb_primary.dsn)
    external.start()
    assert external.sql("SELECT @@port") == [(mariadb_primary.port,)]
    assert external.dsn == mariadb_primary.dsn
    # same machine: the binlog directory is readable, so the paths resolve
    assert external.binlog_files() == mariadb_primary.binlog_files()
    with pytest.raises(ServerStateError):
        external.restart()
    with pytest.raises(ServerStateError):
        _ = external.datadir
    external.close()
    assert mariadb_primary.sql("SELECT 1") == [(1,)]


_PLUGIN_CONFTEST = """
from replica_client.testing import pytest_plugin


def pytest_configure(config):
    if not config.pluginmanager.is_registered(pytest_plugin):
        config.pluginmanager.register(pytest_plugin, "replica_client")
"""


def run_pytest(directory: Path, test_source: str, env: dict[str, str]) -> tuple[int, str]:
    """Run pytest on one test file in a child process with the plugin loaded."""
    (directory / "conftest.py").write_text(_PLUGIN_CONFTEST)
    (directory / "test_child.py").write_text(test_source)
    repo = str(Path(__file__).resolve().parents[2])
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(directory)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=directory,
        env={**os.environ, **env, "PYTHONPATH": repo},
    )
    return result.returncode, result.stdout + result.stderr


def test_plugin_uses_the_dsn_from_the_environment(
    mariadb_primary: MariaDBServer, tmp_path: Path
) -> None:
    code, output = run_pytest(
        tmp_path,
        "from replica_client.testing.server import ExternalServer\n"
        "def test_it(mariadb_primary):\n"
        "    assert isinstance(mariadb_primary, ExternalServer)\n"
        f"    assert mariadb_primary.port == {mariadb_primary.port}\n"
        "    assert mariadb_primary.sql('SELECT @@server_id') == [(1,)]\n",
        {"REPLICA_CLIENT_TEST_DSN": mariadb_primary.dsn},
    )
    assert code == 0, output
    assert "1 passed" in output


def test_plugin_fails_and_never_skips_without_a_server(tmp_path: Path) -> None:
    code, output = run_pytest(
        tmp_path,
        "def test_it(mariadb_primary):\n    pass\n",
        {
            "REPLICA_CLIENT_TEST_DSN": "",
            "REPLICA_CLIENT_MARIADBD": str(tmp_path / "no-such-mariadbd"),
            "DOCKER_HOST": "unix://" + str(tmp_path / "no-docker.sock"),
        },
    )
    assert code != 0, output
    assert "no MariaDB server for the integration tests" in output
    assert "skipped" not in output


def test_plugin_fails_with_the_reason_when_a_flavor_cannot_be_provisioned(tmp_path: Path) -> None:
    with socket.socket() as closed:  # bound, never listening: the mirror refuses
        closed.bind(("127.0.0.1", 0))
        code, output = run_pytest(
            tmp_path,
            "from replica_client.testing import ServerVariant\n"
            "def test_it(mariadb_primary_factory):\n"
            "    mariadb_primary_factory(ServerVariant(flavor='mysql'))\n",
            {
                "REPLICA_CLIENT_SERVER_CACHE": str(tmp_path / "empty-cache"),
                "REPLICA_CLIENT_DEBIAN_MIRROR": f"http://127.0.0.1:{closed.getsockname()[1]}/debian",
            },
        )
    assert code != 0, output
    assert "mysql-9.7 primary (mysql-9.7) is not available" in output
    assert "cannot fetch the package lists of Debian sid" in output
    assert "skipped" not in output


def test_a_starting_server_leaves_other_servers_temporary_files(
    mariadb_primary: MariaDBServer,
) -> None:
    # A server deletes every #sql* file of its tmpdir when it starts: with one
    # tmpdir for all (/tmp), a server starting beside a bootstrap deleted the
    # bootstrap's temporary table and the bootstrap failed. Each has its own.
    assert variables(mariadb_primary, "tmpdir") == {"tmpdir": str(mariadb_primary.tmpdir)}
    held = mariadb_primary.tmpdir / "#sql-temptable-held-1-1.MAI"
    held.write_bytes(b"")
    try:
        with MariaDBServer() as other:
            assert other.tmpdir != mariadb_primary.tmpdir
            assert variables(other, "tmpdir") == {"tmpdir": str(other.tmpdir)}
        assert held.exists()
    finally:
        held.unlink(missing_ok=True)
