"""How the harness runs each kind of server (MariaDB, MySQL): binaries, flags, bootstrap, accounts.

Contract:

- :func:`resolve_install` finds the binaries of a :class:`ServerVariant`: the
  machine's ``mariadbd`` for ``flavor="mariadb", version=None``, else the
  prefix of :mod:`~replica_client.testing.provision` (provisioned on first use,
  once per process). An :class:`Install` runs each binary through the prefix's
  own dynamic loader where there is one. Both live in
  :mod:`~replica_client.testing.binaries` and are re-exported here.
- :class:`ServerKind` (:data:`MARIADB`, :data:`MYSQL`; :func:`kind_of` finds
  the kind of a variant's ``flavor``) knows the server's flags
  (:meth:`ServerKind.server_command`, with ``--no-defaults`` first), how to
  initialize a datadir with a root password and a ``test`` database
  (:meth:`ServerKind.initialize`), the SQL that creates a replication
  user with an authentication plugin, the default grants, the statement that
  reports the binlog position, and the command-line tools of the same install.
- :func:`datadir_template` initializes one pristine datadir per (flavour,
  binary, InnoDB flags) per process; servers copy it. Templates are removed
  when the process exits (:func:`remove_templates`).

Every server binary and tool is called with ``--no-defaults`` first so that
the machine's option files never leak in.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import provision
from .binaries import Install, find_mariadb_install_db, find_mariadbd, resolve_install
from .errors import ServerStartError, ServerStateError
from .process import owned_temp_dir, run_checked, sweep_stale_dirs
from .variant import SERVER_DEFAULTS

if TYPE_CHECKING:
    from .variant import ServerVariant

__all__ = [
    "MARIADB",
    "MYSQL",
    "PASSWORD_FILE",
    "TEMP_PREFIXES",
    "Install",
    "Layout",
    "ServerKind",
    "datadir_template",
    "find_mariadb_install_db",
    "find_mariadbd",
    "forget_templates",
    "innodb_args",
    "kind_of",
    "remove_templates",
    "resolve_install",
]

#: The file beside a template's (and a server's) datadir holding the root password.
PASSWORD_FILE = "root-password"
_TEMPLATE_PREFIX = "replica-client-template-"
#: Prefixes of the temporary directories the harness owns (swept when their owner died).
TEMP_PREFIXES = (_TEMPLATE_PREFIX, "replica-client-mariadb-")
_PLUGIN = re.compile(r"[a-z0-9_]{1,64}")
#: The flags every kind's binlog_args ends its common part with.
_BINLOG_TAIL = ("--max-allowed-packet=1G", "--skip-name-resolve")


# -- where a server's files are ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Layout:
    """The files and port one server's command line names."""

    datadir: Path
    socket: str
    port: int
    pid_file: Path
    error_log: Path
    #: The server's own temporary directory: a server deletes every ``#sql*``
    #: file of its tmpdir when it starts, so servers sharing one (/tmp) delete
    #: each other's temporary tables (a bootstrap running beside a start fails).
    tmpdir: Path | None = None
    key_file: Path | None = None
    ca_cert: Path | None = None
    server_cert: Path | None = None
    server_key: Path | None = None


def _sql_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _own_tmpdir(datadir: Path) -> str:
    """``--tmpdir`` beside ``datadir``, created (see :attr:`Layout.tmpdir`)."""
    tmpdir = datadir.parent / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    return f"--tmpdir={tmpdir}"


def _as_root() -> list[str]:
    return ["--user=root"] if os.geteuid() == 0 else []


# -- the server kinds -----------------------------------------------------------------------------

SqlRunner = Callable[[str, tuple[Any, ...] | None], list[tuple[Any, ...]]]


class ServerKind(ABC):
    """How the harness runs one server product: its flags, bootstrap, accounts and tools."""

    #: ``mariadb`` or ``mysql``.
    name: str = ""
    #: The server binary's name in messages and file names.
    daemon: str = ""
    default_plugin: str = ""
    default_grants: str = ""
    #: The statement whose first row is (file, position, ...) of the binlog's end.
    position_statement: str = ""
    binlog_tool_names: tuple[str, ...] = ()
    client_tool_names: tuple[str, ...] = ()
    #: Relative to a prefix: messages, plugins, charsets.
    _share: str = ""
    #: InnoDB flags every server and template of the kind gets.
    base_innodb: tuple[str, ...] = ()
    #: Flags that trade durability against a machine crash for speed (a killed server is safe).
    fast_io: tuple[str, ...] = ()
    #: The flag that writes the statement text of row events (set but where a variant
    #: keeps the server's defaults).
    _statement_text_flag: str = ""

    def __repr__(self) -> str:
        return f"<ServerKind {self.name}>"

    # -- command lines -----------------------------------------------------------------------

    @abstractmethod
    def binlog_args(self, variant: ServerVariant) -> list[str]:
        """The server flags of ``variant`` that need no files on disk."""

    def _binlog_head(self, variant: ServerVariant) -> list[str]:
        """The flags every kind's :meth:`binlog_args` starts with: the binlog, the server id,
        the format, row image and checksum of ``variant``, and the statement text of row
        events unless ``variant`` keeps the server's defaults."""
        return [
            "--log-bin=mysql-bin",
            "--server-id=1",
            *self._format_args(variant),
            f"--binlog-row-image={variant.row_image}",
            f"--binlog-checksum={variant.checksum}",
            *([] if variant.is_server_defaults else [self._statement_text_flag]),
        ]

    def _format_args(self, variant: ServerVariant) -> list[str]:
        """``--binlog-format``/``--binlog-row-metadata`` where ``variant`` differs from the
        server's own defaults: a server-defaults variant starts as a user's server would."""
        server_format, server_metadata = SERVER_DEFAULTS[self.name]
        args: list[str] = []
        if variant.binlog_format != server_format:
            args.append(f"--binlog-format={variant.binlog_format}")
        if variant.row_metadata != server_metadata:
            args.append(f"--binlog-row-metadata={variant.row_metadata}")
        return args

    def _share_dir(self, prefix: provision.Prefix) -> Path:
        """The prefix's messages, charsets and bootstrap SQL."""
        return prefix.path(f"usr/share/{self._share}")

    def _paths(self, install: Install) -> list[str]:
        """Where a prefix's server finds its messages, plugins and charsets."""
        if install.prefix is None:
            return []
        share = self._share_dir(install.prefix)
        return [
            f"--basedir={install.prefix.path('usr')}",
            f"--lc-messages-dir={share}",
            f"--plugin-dir={install.prefix.path('usr/lib/mysql/plugin')}",
            f"--character-sets-dir={share / 'charsets'}",
        ]

    def server_command(self, install: Install, variant: ServerVariant, layout: Layout) -> list[str]:
        """The full command line of one server."""
        cmd = [*install.argv(install.server), "--no-defaults", *_as_root(), *self._paths(install)]
        cmd += [
            f"--datadir={layout.datadir}",
            f"--socket={layout.socket}",
            f"--port={layout.port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={layout.pid_file}",
            f"--log-error={layout.error_log}",
            *([f"--tmpdir={layout.tmpdir}"] if layout.tmpdir is not None else []),
            *self.binlog_args(variant),
            *self.base_innodb,
            *self.fast_io,
        ]
        if layout.key_file is not None:
            cmd += self._encryption_args(layout.key_file)
        if layout.ca_cert is not None:
            cmd += [
                f"--ssl-ca={layout.ca_cert}",
                f"--ssl-cert={layout.server_cert}",
                f"--ssl-key={layout.server_key}",
            ]
        cmd += variant.extra_args
        return cmd

    def _encryption_args(self, key_file: Path) -> list[str]:
        raise ServerStateError(f"{self.name} servers have no binlog encryption variant")

    def tool_args(self, install: Install, client: bool = False) -> list[str]:
        """Flags a tool of the install needs after ``--no-defaults`` (a prefix's paths)."""
        if install.prefix is None:
            return []
        args = [f"--character-sets-dir={self._share_dir(install.prefix) / 'charsets'}"]
        if client:  # the client's own auth plugins, of the same build
            args.append(f"--plugin-dir={self._client_plugins(install.prefix)}")
        return args

    @abstractmethod
    def _client_plugins(self, prefix: provision.Prefix) -> Path:
        """Where a prefix keeps the client side of the auth plugins."""

    def binlog_tool(self, install: Install) -> list[str]:
        """``mariadb-binlog``/``mysqlbinlog`` of the same install, ``--no-defaults`` first."""
        relative = install.prefix.recipe.binlog_tool if install.prefix else None
        return [
            *install.tool(self.binlog_tool_names, relative),
            "--no-defaults",
            *self.tool_args(install),
        ]

    def client_tool(self, install: Install) -> list[str]:
        """The ``mariadb``/``mysql`` client of the same install, ``--no-defaults`` first."""
        relative = install.prefix.recipe.client_tool if install.prefix else None
        return [
            *install.tool(self.client_tool_names, relative),
            "--no-defaults",
            *self.tool_args(install, client=True),
        ]

    # -- datadir --------------------------------------------------------------------------------

    @abstractmethod
    def initialize(
        self, install: Install, datadir: Path, password: str, innodb: Sequence[str]
    ) -> None:
        """Make a never-started datadir with root's ``password`` and a ``test`` database."""

    # -- accounts ---------------------------------------------------------------------------------

    @abstractmethod
    def create_user_statements(self, account: str, plugin: str) -> list[str]:
        """Statements that (re)create ``account``; ``%s`` stands for the password."""

    def ensure_auth_plugin(self, sql: SqlRunner, plugin: str) -> None:
        """Install the server side of ``plugin`` if it is not active yet."""
        if not _PLUGIN.fullmatch(plugin):
            raise ValueError(f"plugin must match {_PLUGIN.pattern}, got {plugin!r}")


class MariaDB(ServerKind):
    name = "mariadb"
    daemon = "mariadbd"
    default_plugin = "mysql_native_password"
    default_grants = "REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR, SELECT"
    position_statement = "SHOW MASTER STATUS"
    binlog_tool_names = ("mariadb-binlog", "mysqlbinlog")
    client_tool_names = ("mariadb", "mysql")
    _share = "mariadb"
    base_innodb = ("--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M")
    fast_io = ("--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--skip-innodb-doublewrite")

    # ON is the server's default too; a server-defaults variant leaves it unsaid
    _statement_text_flag = "--binlog-annotate-row-events=ON"

    def binlog_args(self, variant: ServerVariant) -> list[str]:
        args = [
            *self._binlog_head(variant),
            "--rpl-semi-sync-master-enabled=ON",
            "--rpl-semi-sync-master-timeout=500",
            *_BINLOG_TAIL,
        ]
        if variant.compress:
            args += ["--log-bin-compress=ON", "--log-bin-compress-min-len=10"]
        return args

    def _encryption_args(self, key_file: Path) -> list[str]:
        return [
            "--plugin-load-add=file_key_management",
            f"--file-key-management-filename={key_file}",
            "--encrypt-binlog=ON",
        ]

    def _client_plugins(self, prefix: provision.Prefix) -> Path:
        return prefix.libdir / "libmariadb3" / "plugin"  # parsec, client_ed25519

    def initialize(
        self, install: Install, datadir: Path, password: str, innodb: Sequence[str]
    ) -> None:
        setup = _root_setup_mariadb(password)
        if install.prefix is None:
            self._install_db(install, datadir, setup, innodb)
            return
        # mariadb-install-db execs the server directly, which a prefix's binary
        # cannot do without its loader: feed the bootstrap SQL ourselves.
        share = self._share_dir(install.prefix)
        scripts = [
            "mariadb_system_tables.sql",
            "mariadb_performance_tables.sql",
            "mariadb_system_tables_data.sql",
            "maria_add_gis_sp_bootstrap.sql",
        ]
        parts = [
            "create database if not exists mysql;",
            "use mysql;",
            "SET @auth_root_socket=NULL;",
        ]
        try:
            parts += [(share / name).read_text() for name in scripts]
        except OSError as exc:
            raise ServerStartError(
                f"bootstrap SQL of {install.prefix.root} is missing: {exc}"
            ) from exc
        parts.append(setup)
        datadir.mkdir(parents=True)
        cmd = [
            *install.argv(install.server),
            "--no-defaults",
            "--bootstrap",
            *_as_root(),
            f"--datadir={datadir}",
            _own_tmpdir(datadir),
            *self._paths(install),
            "--skip-name-resolve",
            *self.base_innodb,
            *innodb,
        ]
        run_checked(cmd, f"{self.daemon} --bootstrap", stdin_text="\n".join(parts) + "\n")
        version = install.prefix.server_version.split("-")[0]
        (datadir / "mariadb_upgrade_info").write_text(f"{version}-MariaDB")

    def _install_db(
        self, install: Install, datadir: Path, setup: str, innodb: Sequence[str]
    ) -> None:
        install_db = find_mariadb_install_db(str(install.server))
        if install_db is None:
            raise ServerStartError(
                f"mariadb-install-db not found (looked on PATH and beside {install.server}); "
                "install the mariadb-server package or set REPLICA_CLIENT_MARIADB_INSTALL_DB"
            )
        sql_file = datadir.parent / "bootstrap.sql"
        sql_file.write_text(setup)
        cmd = [
            install_db,
            "--no-defaults",
            *_as_root(),
            f"--datadir={datadir}",
            _own_tmpdir(datadir),
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            f"--extra-file={sql_file}",
            *self.base_innodb,
            *innodb,
        ]
        run_checked(cmd, "mariadb-install-db")

    def create_user_statements(self, account: str, plugin: str) -> list[str]:
        return [f"CREATE OR REPLACE USER {account} IDENTIFIED VIA {plugin} USING PASSWORD(%s)"]

    def ensure_auth_plugin(self, sql: SqlRunner, plugin: str) -> None:
        super().ensure_auth_plugin(sql, plugin)
        if plugin == "mysql_native_password" or _plugin_active(sql, plugin):
            return
        # ed25519 -> auth_ed25519, parsec -> auth_parsec (MariaDB 11.6+)
        _install_plugin(sql, plugin, f"INSTALL SONAME 'auth_{plugin}'")


class MySQL(ServerKind):
    name = "mysql"
    daemon = "mysqld"
    default_plugin = "caching_sha2_password"
    default_grants = "REPLICATION SLAVE, REPLICATION CLIENT, SELECT"
    position_statement = "SHOW BINARY LOG STATUS"
    binlog_tool_names = ("mysqlbinlog",)
    client_tool_names = ("mysql",)
    _share = "mysql"
    base_innodb = ("--innodb-buffer-pool-size=64M", "--innodb-redo-log-capacity=32M")
    fast_io = ("--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--innodb-doublewrite=OFF")

    # OFF by default: a server-defaults variant writes no Rows_query events
    _statement_text_flag = "--binlog-rows-query-log-events=ON"

    def binlog_args(self, variant: ServerVariant) -> list[str]:
        # binlog_format is deprecated (a warning at start when set) and ROW by default:
        # it is set only for MIXED and STATEMENT.
        args = [
            *self._binlog_head(variant),
            "--gtid-mode=ON",
            "--enforce-gtid-consistency=ON",
            "--plugin-load-add=semisync_source.so",
            "--rpl-semi-sync-source-enabled=ON",
            "--rpl-semi-sync-source-timeout=500",
            *_BINLOG_TAIL,
            "--secure-file-priv=",
            "--mysqlx=OFF",
        ]
        if variant.transaction_compression:
            args.append("--binlog-transaction-compression=ON")
        return args

    def _client_plugins(self, prefix: provision.Prefix) -> Path:
        return prefix.path("usr/lib/mysql/plugin")

    def initialize(
        self, install: Install, datadir: Path, password: str, innodb: Sequence[str]
    ) -> None:
        init_file = datadir.parent / "init.sql"
        init_file.write_text(_root_setup_mysql(password))
        cmd = [
            *install.argv(install.server),
            "--no-defaults",
            "--initialize-insecure",
            *_as_root(),
            f"--datadir={datadir}",
            _own_tmpdir(datadir),
            *self._paths(install),
            f"--init-file={init_file}",
            *self.base_innodb,
            *innodb,
        ]
        run_checked(cmd, f"{self.daemon} --initialize-insecure")
        # Each copy makes its own server_uuid (the GTIDs' source id) at first start.
        (datadir / "auto.cnf").unlink(missing_ok=True)

    def create_user_statements(self, account: str, plugin: str) -> list[str]:
        return [
            f"DROP USER IF EXISTS {account}",
            f"CREATE USER {account} IDENTIFIED WITH {plugin} BY %s",
        ]

    def ensure_auth_plugin(self, sql: SqlRunner, plugin: str) -> None:
        super().ensure_auth_plugin(sql, plugin)
        if plugin != "mysql_native_password" or _plugin_active(sql, plugin):
            return
        _install_plugin(sql, plugin, f"INSTALL PLUGIN {plugin} SONAME '{plugin}.so'")


def _plugin_active(sql: SqlRunner, plugin: str) -> bool:
    rows = sql(
        "SELECT 1 FROM information_schema.PLUGINS "
        "WHERE PLUGIN_NAME = %s AND PLUGIN_STATUS = 'ACTIVE'",
        (plugin,),
    )
    return bool(rows)


def _install_plugin(sql: SqlRunner, plugin: str, statement: str) -> None:
    import pymysql

    try:
        sql(statement, None)
    except pymysql.err.Error as exc:
        raise ServerStateError(
            f"the auth plugin {plugin} is not available on this server ({statement}): {exc}"
        ) from exc


def _root_setup_mariadb(password: str) -> str:
    literal = _sql_literal(password)
    lines = [
        "DELETE FROM mysql.global_priv WHERE Host NOT IN ('localhost', '127.0.0.1', '::1');",
        "DELETE FROM mysql.proxies_priv WHERE Host NOT IN ('localhost', '127.0.0.1', '::1');",
        "FLUSH PRIVILEGES;",
        *(
            f"ALTER USER 'root'@'{host}' IDENTIFIED BY {literal};"
            for host in ("localhost", "127.0.0.1", "::1")
        ),
        "CREATE DATABASE IF NOT EXISTS test;",
    ]
    return "\n".join(lines) + "\n"


def _root_setup_mysql(password: str) -> str:
    literal = _sql_literal(password)
    lines = [f"ALTER USER 'root'@'localhost' IDENTIFIED BY {literal};"]
    for host in ("127.0.0.1", "::1"):
        lines += [
            f"CREATE USER 'root'@'{host}' IDENTIFIED BY {literal};",
            f"GRANT ALL PRIVILEGES ON *.* TO 'root'@'{host}' WITH GRANT OPTION;",
        ]
    lines.append("CREATE DATABASE IF NOT EXISTS test;")
    return "\n".join(lines) + "\n"


MARIADB = MariaDB()
MYSQL = MySQL()
_KINDS = {kind.name: kind for kind in (MARIADB, MYSQL)}


def kind_of(flavor: str) -> ServerKind:
    """The :class:`ServerKind` of a variant's ``flavor`` (``mariadb`` or ``mysql``)."""
    try:
        return _KINDS[flavor]
    except KeyError:
        raise ValueError(f"unknown server flavor {flavor!r}; known: {tuple(_KINDS)}") from None


# -- pristine datadir templates, one per (kind, binary, InnoDB flags) per process --------------

_TEMPLATE_LOCK = threading.Lock()
_TEMPLATES: dict[tuple[str, str, tuple[str, ...]], Path] = {}
_swept = False


def innodb_args(extra_args: Sequence[str]) -> tuple[str, ...]:
    """The InnoDB flags among ``extra_args``: they must be the same at initialization."""
    return tuple(a for a in extra_args if a.startswith(("--innodb", "--loose-innodb")))


def datadir_template(kind: ServerKind, install: Install, innodb: tuple[str, ...]) -> Path:
    """An initialized, never started datadir (``<dir>/data``) plus its root password file."""
    global _swept
    key = (kind.name, str(install.server), innodb)
    with _TEMPLATE_LOCK:
        cached = _TEMPLATES.get(key)
        if cached is not None and (cached / "data").is_dir():
            return cached
        if not _swept:
            _swept = True
            sweep_stale_dirs(TEMP_PREFIXES)
        root = owned_temp_dir(_TEMPLATE_PREFIX)
        password = secrets.token_urlsafe(18)
        (root / PASSWORD_FILE).write_text(password)
        try:
            kind.initialize(install, root / "data", password, innodb)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        _TEMPLATES[key] = root
        return root


def remove_templates() -> None:
    """Remove every template this process made."""
    with _TEMPLATE_LOCK:
        for root in _TEMPLATES.values():
            shutil.rmtree(root, ignore_errors=True)
        _TEMPLATES.clear()


def forget_templates() -> None:
    """In a forked child: the parent's templates are not ours to remove."""
    global _TEMPLATE_LOCK
    _TEMPLATE_LOCK = threading.Lock()
    _TEMPLATES.clear()
