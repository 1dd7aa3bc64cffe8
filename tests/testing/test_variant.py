"""ServerVariant: flavours and versions, options per flavour, labels, and the command
lines each flavour builds from a variant (no server is started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replica_client.testing import provision, server_kinds
from replica_client.testing.server import ServerVariant

__all__: list[str] = []


def test_flavor_and_version_defaults_and_normalization() -> None:
    assert ServerVariant().flavor == "mariadb" and ServerVariant().version is None
    mysql = ServerVariant(flavor="MySQL")
    assert (mysql.flavor, mysql.version) == ("mysql", "9.7")
    assert mysql == ServerVariant(flavor="mysql", version="9.7")
    assert hash(mysql) == hash(ServerVariant(flavor="mysql", version="9.7"))
    assert ServerVariant(flavor="mariadb", version="11.8").provisioned
    assert not ServerVariant().provisioned
    assert ServerVariant(flavor="mariadb", version="11.8") != ServerVariant()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"flavor": "postgres"}, "flavor must be one of"),
        ({"flavor": "mariadb", "version": "10.6"}, "version for mariadb must be one of"),
        ({"flavor": "mysql", "version": "8.0"}, "version for mysql must be one of"),
        ({"flavor": "mysql", "compress": True}, "compress applies to mariadb only"),
        ({"flavor": "mysql", "encrypt": True}, "encrypt applies to mariadb only"),
        ({"transaction_compression": True}, "transaction_compression applies to mysql only"),
        ({"flavor": "mysql", "row_metadata": "NO_LOG"}, "row_metadata for mysql"),
        ({"row_image": "PARTIAL"}, "row_image"),
        ({"checksum": "MD5"}, "checksum"),
        ({"binlog_format": "ROWS"}, "binlog_format for mariadb must be one of"),
        ({"flavor": "mysql", "binlog_format": ""}, "binlog_format for mysql must be one of"),
        ({"binlog_format": None}, "binlog_format"),
    ],
)
def test_options_that_do_not_apply_raise(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ServerVariant(**options)  # type: ignore[arg-type]


def test_positional_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        ServerVariant("mysql")  # type: ignore[call-arg]


def test_labels_name_flavor_version_and_differences() -> None:
    assert ServerVariant().label == "mariadb"
    assert ServerVariant(version="11.8").label == "mariadb-11.8"
    assert ServerVariant(flavor="mysql").label == "mysql-9.7"
    assert (
        ServerVariant(
            flavor="mysql", row_image="minimal", tls=True, transaction_compression=True
        ).label
        == "mysql-9.7:row_image=MINIMAL,tls,transaction_compression"
    )
    assert ServerVariant(version="11.8", extra_args=("--x=1",)).label == "mariadb-11.8:--x=1"


def test_binlog_format_is_validated_upper_cased_and_labelled() -> None:
    assert ServerVariant().binlog_format == "ROW"
    assert ServerVariant(flavor="mysql").binlog_format == "ROW"
    mixed = ServerVariant(binlog_format="mixed")
    assert mixed.binlog_format == "MIXED"
    assert mixed == ServerVariant(binlog_format="MIXED") and hash(mixed) == hash(
        ServerVariant(binlog_format="MIXED")
    )
    assert mixed != ServerVariant()
    assert ServerVariant(flavor="mysql", binlog_format="Statement").binlog_format == "STATEMENT"
    assert mixed.label == "mariadb:binlog_format=MIXED"
    assert (
        ServerVariant(version="11.8", binlog_format="STATEMENT", row_image="MINIMAL").label
        == "mariadb-11.8:binlog_format=STATEMENT,row_image=MINIMAL"
    )


def test_server_defaults_are_each_flavors_own() -> None:
    mariadb = ServerVariant.server_defaults()
    assert (mariadb.flavor, mariadb.version) == ("mariadb", None)
    assert (mariadb.binlog_format, mariadb.row_metadata) == ("MIXED", "NO_LOG")
    assert (mariadb.row_image, mariadb.checksum) == ("FULL", "CRC32")
    assert mariadb.is_server_defaults and mariadb.label == "mariadb:server_defaults"
    assert mariadb == ServerVariant(binlog_format="MIXED", row_metadata="NO_LOG")
    mysql = ServerVariant.server_defaults("MySQL")
    assert (mysql.flavor, mysql.version) == ("mysql", "9.7")
    assert (mysql.binlog_format, mysql.row_metadata) == ("ROW", "MINIMAL")
    assert mysql.is_server_defaults and mysql.label == "mysql-9.7:server_defaults"
    tls = ServerVariant.server_defaults("mariadb", "11.8", tls=True, row_image="minimal")
    assert tls.is_server_defaults and tls.tls and tls.row_image == "MINIMAL"
    assert tls.label == "mariadb-11.8:server_defaults,row_image=MINIMAL,tls"
    for variant in (
        ServerVariant(),
        ServerVariant(flavor="mysql"),
        ServerVariant(binlog_format="MIXED"),
        ServerVariant(row_metadata="NO_LOG"),
        ServerVariant(flavor="mysql", binlog_format="MIXED", row_metadata="MINIMAL"),
    ):
        assert not variant.is_server_defaults, variant


def test_server_defaults_refuses_the_settings_it_makes() -> None:
    with pytest.raises(TypeError, match="sets binlog_format itself"):
        ServerVariant.server_defaults(binlog_format="ROW")
    with pytest.raises(TypeError, match="sets binlog_format and row_metadata itself"):
        ServerVariant.server_defaults("mysql", row_metadata="FULL", binlog_format="ROW")
    with pytest.raises(ValueError, match="flavor must be one of"):
        ServerVariant.server_defaults("postgres")
    with pytest.raises(ValueError, match="version for mysql must be one of"):
        ServerVariant.server_defaults("mysql", "8.0")
    with pytest.raises(ValueError, match="compress applies to mariadb only"):
        ServerVariant.server_defaults("mysql", compress=True)


def layout(tmp_path: Path, tls: bool = False, keys: bool = False) -> server_kinds.Layout:
    return server_kinds.Layout(
        datadir=tmp_path / "data",
        socket=str(tmp_path / "s.sock"),
        port=3399,
        pid_file=tmp_path / "p.pid",
        error_log=tmp_path / "data" / "error.log",
        key_file=tmp_path / "keys" / "k.txt" if keys else None,
        ca_cert=tmp_path / "ca.pem" if tls else None,
        server_cert=tmp_path / "cert.pem" if tls else None,
        server_key=tmp_path / "key.pem" if tls else None,
    )


def test_mysql_command_line_uses_mysql_spellings(tmp_path: Path) -> None:
    variant = ServerVariant(
        flavor="mysql",
        row_image="NOBLOB",
        checksum="NONE",
        tls=True,
        transaction_compression=True,
        extra_args=("--max-connections=9",),
    )
    install = server_kinds.Install("mysql", Path("/opt/mysqld"))
    cmd = server_kinds.MYSQL.server_command(install, variant, layout(tmp_path, tls=True))
    assert cmd[:2] == ["/opt/mysqld", "--no-defaults"]
    for flag in (
        "--gtid-mode=ON",
        "--enforce-gtid-consistency=ON",
        "--binlog-row-image=NOBLOB",
        "--binlog-row-metadata=FULL",
        "--binlog-checksum=NONE",
        "--binlog-transaction-compression=ON",
        "--plugin-load-add=semisync_source.so",
        "--rpl-semi-sync-source-enabled=ON",
        "--secure-file-priv=",
        "--mysqlx=OFF",
        "--port=3399",
        f"--ssl-ca={tmp_path / 'ca.pem'}",
    ):
        assert flag in cmd, flag
    assert cmd[-1] == "--max-connections=9"
    assert not [
        a for a in cmd if "semi-sync-master" in a or "annotate" in a or "log-bin-compress" in a
    ]


FORMAT_FLAGS = (
    "--binlog-format",
    "--binlog-row-metadata",
    "--binlog-annotate-row-events",
    "--binlog-rows-query-log-events",
)


def format_flags(cmd: list[str]) -> list[str]:
    return [a for a in cmd if a.startswith(FORMAT_FLAGS)]


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        (
            ServerVariant(),
            [
                "--binlog-format=ROW",
                "--binlog-row-metadata=FULL",
                "--binlog-annotate-row-events=ON",
            ],
        ),
        (
            ServerVariant(flavor="mysql"),
            ["--binlog-row-metadata=FULL", "--binlog-rows-query-log-events=ON"],
        ),
        (ServerVariant.server_defaults(), []),
        (ServerVariant.server_defaults(version="11.8", row_image="MINIMAL"), []),
        (ServerVariant.server_defaults("mysql"), []),
        (
            ServerVariant(binlog_format="MIXED"),
            ["--binlog-row-metadata=FULL", "--binlog-annotate-row-events=ON"],
        ),
        (
            ServerVariant(row_metadata="NO_LOG"),
            ["--binlog-format=ROW", "--binlog-annotate-row-events=ON"],
        ),
        (
            ServerVariant(flavor="mysql", binlog_format="statement", row_metadata="MINIMAL"),
            ["--binlog-format=STATEMENT", "--binlog-rows-query-log-events=ON"],
        ),
    ],
    ids=lambda v: v.label if isinstance(v, ServerVariant) else "",
)
def test_format_and_metadata_flags_only_where_they_differ_from_the_servers(
    variant: ServerVariant, expected: list[str]
) -> None:
    args = server_kinds.kind_of(variant.flavor).binlog_args(variant)
    assert format_flags(args) == expected
    # what the harness needs, whatever the variant
    assert args[:2] == ["--log-bin=mysql-bin", "--server-id=1"]
    assert f"--binlog-row-image={variant.row_image}" in args
    assert f"--binlog-checksum={variant.checksum}" in args
    semi_sync = "source" if variant.flavor == "mysql" else "master"
    assert f"--rpl-semi-sync-{semi_sync}-enabled=ON" in args
    assert ("--gtid-mode=ON" in args) == (variant.flavor == "mysql")


def test_prefix_command_lines_run_through_the_prefixs_loader(tmp_path: Path) -> None:
    prefix = provision.Prefix(
        tmp_path / "px",
        provision.recipe("mariadb", "11.8"),
        provision.machine("x86_64"),
        {},
    )
    install = server_kinds.Install("mariadb", prefix.path("usr/sbin/mariadbd"), prefix)
    variant = ServerVariant(version="11.8", encrypt=True)
    cmd = server_kinds.MARIADB.server_command(install, variant, layout(tmp_path, keys=True))
    libdir = tmp_path / "px" / "usr" / "lib" / "x86_64-linux-gnu"
    assert cmd[:5] == [
        str(libdir / "ld-linux-x86-64.so.2"),
        "--library-path",
        str(libdir),
        str(tmp_path / "px" / "usr" / "sbin" / "mariadbd"),
        "--no-defaults",
    ]
    assert f"--plugin-dir={tmp_path / 'px' / 'usr' / 'lib' / 'mysql' / 'plugin'}" in cmd
    assert f"--lc-messages-dir={tmp_path / 'px' / 'usr' / 'share' / 'mariadb'}" in cmd
    assert "--plugin-load-add=file_key_management" in cmd
    tool = server_kinds.MARIADB.binlog_tool(install)
    assert tool[3:5] == [str(tmp_path / "px" / "usr" / "bin" / "mariadb-binlog"), "--no-defaults"]


def test_aarch64_is_known_by_name_and_other_machines_fail_clearly() -> None:
    arm = provision.machine("aarch64")
    assert (arm.arch, arm.triplet, arm.loader) == (
        "arm64",
        "aarch64-linux-gnu",
        "ld-linux-aarch64.so.1",
    )
    assert provision.machine("arm64") == arm
    with pytest.raises(provision.ProvisionError, match="riscv64"):
        provision.machine("riscv64")
