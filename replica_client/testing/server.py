"""Private database servers for integration tests: MariaDB and MySQL, one class family.

Contract:

- :class:`DatabaseServer` (also importable as :class:`MariaDBServer`, its first
  name) owns one server process of the flavour and version its
  :class:`ServerVariant` names: the machine's MariaDB (``version=None``), or
  MariaDB 11.8 / MySQL 9.7 from a prefix provisioned from Debian packages on
  first use (:mod:`~replica_client.testing.provision`). It gets a fresh
  datadir (copied from a per-process pristine template), a free loopback port,
  binlog on in the variant's format (ROW unless it says otherwise), semi-sync
  primary enabled with a short timeout.
  ``start()`` blocks until the server accepts connections and raises
  :class:`ServerStartError` with the tail of the error log when it does not.
  ``stop()`` shuts it down with SIGTERM, ``kill()`` with SIGKILL (process
  group), ``restart()`` keeps datadir and port. Every started server is also
  stopped at interpreter exit, and the process gets SIGTERM if the Python
  process that started it dies.
- ``flavor``, ``version`` (the server's own version string), ``binlog_tool()``
  and ``client_tool()`` (argv prefixes of ``mariadb-binlog``/``mysqlbinlog`` and
  ``mariadb``/``mysql`` of the same install, ``--no-defaults`` first) and
  ``binlog_position()`` hide the flavour differences; the differences
  themselves live in :mod:`~replica_client.testing.server_kinds`.
- :meth:`DatabaseServer.sql` is a synchronous control channel (PyMySQL,
  autocommit) for setting up data and checking state; it is not the code under
  test.
- :class:`ExternalServer` wraps an existing primary given by a DSN
  (``mariadb://user:pass@host:port``) behind the same attributes; operations that
  need the process or the datadir raise :class:`ServerStateError`.
- :class:`~replica_client.testing.containers.ContainerServer` (also
  ``replica_client.testing.ContainerServer``) runs a server in a Docker
  container where a Docker engine is available.

Every server binary and tool is called with ``--no-defaults`` first so that
the machine's option files never leak in.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pymysql

from ..dsn import format_dsn, parse_dsn
from . import server_kinds
from .certs import write_key_file, write_tls_files
from .errors import PortInUseError, ServerStartError, ServerStateError
from .process import ServerProcess, free_port, owned_temp_dir
from .server_kinds import PASSWORD_FILE, find_mariadb_install_db, find_mariadbd
from .variant import ServerVariant

__all__ = [
    "DatabaseServer",
    "ExternalServer",
    "MariaDBServer",
    "ServerStartError",
    "ServerStateError",
    "ServerVariant",
    "find_mariadb_install_db",
    "find_mariadbd",
    "parse_dsn",
]

_IDENT = re.compile(r"[A-Za-z0-9_.\-]{1,80}")
_GRANTS = re.compile(r"[A-Za-z ,_]+")
_SERVER_PREFIX = server_kinds.TEMP_PREFIXES[1]


# -- live servers, stopped at exit --------------------------------------------------------

_LIVE_LOCK = threading.Lock()
_LIVE: dict[int, DatabaseServer] = {}


def _stop_everything() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE.values())
    for server in servers:
        with contextlib.suppress(Exception):
            server.close()
    server_kinds.remove_templates()


def _forget_inherited() -> None:
    # A forked child (multiprocessing, a test that forks) owns none of its parent's
    # servers or templates: it must not stop or delete them when it exits.
    global _LIVE_LOCK
    _LIVE_LOCK = threading.Lock()
    _LIVE.clear()
    server_kinds.forget_templates()


atexit.register(_stop_everything)
os.register_at_fork(after_in_child=_forget_inherited)


class DatabaseServer:
    """One private MariaDB or MySQL primary; see the module docstring for the contract."""

    host: str = "127.0.0.1"
    user: str = "root"
    server_id: int = 1
    binlog_basename: str = "mysql-bin"

    def __init__(
        self,
        variant: ServerVariant | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        mariadbd: str | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self.variant = variant if variant is not None else ServerVariant()
        self._kind = server_kinds.kind_of(self.variant.flavor)
        if mariadbd is not None and self.variant.provisioned:
            raise ValueError(f"mariadbd= names the machine's install, not {self.variant.label}")
        self._requested_base_dir = Path(base_dir).resolve() if base_dir is not None else None
        self._base_dir: Path | None = self._requested_base_dir
        self._owns_base_dir = False
        self._mariadbd = mariadbd
        self._install: server_kinds.Install | None = None
        self.startup_timeout = startup_timeout
        self._port: int | None = None
        self._password: str | None = None
        self._version: str | None = None
        self._socket: str | None = None
        self._socket_dir: Path | None = None
        self._process = ServerProcess(self._kind.daemon)
        self._conn: pymysql.connections.Connection[Any] | None = None
        self._lock = threading.RLock()
        #: Seconds the last ``start()`` took, including datadir preparation.
        self.last_start_seconds: float | None = None

    # -- attributes --------------------------------------------------------------------

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        port = self._port if self._port is not None else "?"
        return f"<{type(self).__name__} {self.variant.label} {self.host}:{port} {state}>"

    @property
    def flavor(self) -> str:
        """``mariadb`` or ``mysql``."""
        return self.variant.flavor

    @property
    def version(self) -> str:
        """The server's version string, e.g. ``11.8.9-MariaDB-0+deb13u1`` or ``9.7.4-2``."""
        if self._version is None:
            rows = self.sql("SELECT VERSION()")
            self._version = str(rows[0][0])
        return self._version

    @property
    def install(self) -> server_kinds.Install:
        """The binaries this server runs (provisioned on first use for a versioned variant)."""
        if self._install is None:
            self._install = server_kinds.resolve_install(self.variant, self._mariadbd)
        return self._install

    @property
    def base_dir(self) -> Path:
        """Directory holding datadir, socket, key and certificate files."""
        if self._base_dir is None:
            self._base_dir = owned_temp_dir(_SERVER_PREFIX)
            self._owns_base_dir = True
        return self._base_dir

    @property
    def datadir(self) -> Path:
        return self.base_dir / "data"

    @property
    def port(self) -> int:
        if self._port is None:
            raise ServerStateError(f"{self!r} has no port yet: call start() first")
        return self._port

    @property
    def password(self) -> str:
        if self._password is None:
            stored = self.base_dir / PASSWORD_FILE
            if not stored.exists():
                raise ServerStateError(f"{self!r} has no root password yet: call start() first")
            self._password = stored.read_text().strip()
        return self._password

    @property
    def socket(self) -> str:
        """Unix socket path (kept short: sockets paths are limited to ~107 bytes)."""
        if self._socket is None:
            candidate = self.base_dir / f"{self._kind.daemon}.sock"
            if len(str(candidate)) > 100:
                self._socket_dir = Path(tempfile.mkdtemp(prefix="rc-sock-"))
                candidate = self._socket_dir / f"{self._kind.daemon}.sock"
            self._socket = str(candidate)
        return self._socket

    @property
    def pid_file(self) -> Path:
        return self.base_dir / f"{self._kind.daemon}.pid"

    @property
    def error_log(self) -> Path:
        return self.datadir / "error.log"

    @property
    def tmpdir(self) -> Path:
        """The server's own temporary directory (``server_kinds.Layout.tmpdir``)."""
        return self.base_dir / "tmp"

    @property
    def key_file(self) -> Path | None:
        """file_key_management key file (keys 1 and 2) for the ``encrypt`` variant."""
        return self.base_dir / "keys" / "keyfile.txt" if self.variant.encrypt else None

    @property
    def ca_cert(self) -> Path | None:
        return self.base_dir / "tls" / "ca.pem" if self.variant.tls else None

    @property
    def server_cert(self) -> Path | None:
        return self.base_dir / "tls" / "server-cert.pem" if self.variant.tls else None

    @property
    def server_key(self) -> Path | None:
        return self.base_dir / "tls" / "server-key.pem" if self.variant.tls else None

    @property
    def dsn(self) -> str:
        return format_dsn(self.user, self.password, self.host, self.port)

    @property
    def running(self) -> bool:
        return self._process.running

    @property
    def pid(self) -> int | None:
        return self._process.pid

    # -- tools of the same install ------------------------------------------------------

    def binlog_tool(self) -> list[str]:
        """argv prefix of ``mariadb-binlog``/``mysqlbinlog`` of this install (``--no-defaults``)."""
        return self._kind.binlog_tool(self.install)

    def client_tool(self) -> list[str]:
        """argv prefix of the ``mariadb``/``mysql`` client of this install (``--no-defaults``)."""
        return self._kind.client_tool(self.install)

    # -- lifecycle ---------------------------------------------------------------------

    def command(self, port: int) -> list[str]:
        """The full server command line for ``port``."""
        layout = server_kinds.Layout(
            datadir=self.datadir,
            socket=self.socket,
            port=port,
            pid_file=self.pid_file,
            error_log=self.error_log,
            tmpdir=self.tmpdir,
            key_file=self.key_file,
            ca_cert=self.ca_cert,
            server_cert=self.server_cert,
            server_key=self.server_key,
        )
        return self._kind.server_command(self.install, self.variant, layout)

    def start(self) -> None:
        """Initialize the datadir if needed and start; block until it accepts connections."""
        with self._lock:
            if self.running:
                return
            began = time.monotonic()
            self._prepare()
            self._version = None
            if self._port is not None:
                self._launch_on(self._port, retry_for=10.0)
            else:
                for attempt in range(5):
                    port = free_port()
                    try:
                        self._launch(port)
                    except PortInUseError:
                        if attempt == 4:
                            raise
                        continue
                    self._port = port
                    break
            self.last_start_seconds = time.monotonic() - began

    def stop(self, timeout: float = 60.0) -> None:
        """Shut down with SIGTERM and wait; SIGKILL the process group after ``timeout``."""
        with self._lock:
            self._drop_connection()
            self._process.stop(timeout)

    def kill(self) -> None:
        """SIGKILL the server's process group (a crash, for recovery tests) and reap it."""
        with self._lock:
            self._drop_connection()
            self._process.kill()

    def restart(self, kill: bool = False) -> None:
        """Stop (or kill) and start again with the same datadir and port."""
        with self._lock:
            if kill:
                self.kill()
            else:
                self.stop()
            self.start()

    def cleanup(self) -> None:
        """Stop, then remove the temporary directories this object created."""
        self.stop()
        if self._owns_base_dir and self._base_dir is not None:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None
            self._owns_base_dir = False
            self._port = None
            self._password = None
            self._socket = None
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
            self._socket = None
        with _LIVE_LOCK:
            _LIVE.pop(id(self), None)

    def close(self) -> None:
        """What the fixtures and the exit hook call: stop and clean up."""
        self.cleanup()

    def __enter__(self) -> DatabaseServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- control channel -----------------------------------------------------------------

    def sql(self, query: str, args: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]]:
        """Run one statement (autocommit, ``%s`` placeholders); rows, or ``[]``."""
        with self._lock:
            conn = self._connection()
            with conn.cursor() as cursor:
                cursor.execute(query, args)
                rows = cursor.fetchall()
            return [tuple(row) for row in rows] if rows else []

    def sql_many(self, statements: Sequence[str]) -> None:
        """Run statements in order on one connection."""
        with self._lock:
            conn = self._connection()
            with conn.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)

    def binlog_files(self) -> list[Path]:
        """Absolute paths of the binary logs, in ``SHOW BINARY LOGS`` order."""
        names = [str(row[0]) for row in self.sql("SHOW BINARY LOGS")]
        return [self._binlog_dir() / name for name in names]

    def binlog_position(self) -> tuple[str, int]:
        """The end of the binary log now: (file name, position)."""
        rows = self.sql(self._kind.position_statement)
        if not rows:
            raise ServerStateError(f"{self!r} has no binary log (log_bin is OFF)")
        return str(rows[0][0]), int(rows[0][1])

    def create_user(
        self,
        name: str,
        password: str,
        plugin: str | None = None,
        grants: str | None = None,
    ) -> str:
        """(Re)create ``name``@``%`` and ``name``@``localhost``; return its DSN.

        ``plugin`` defaults to the flavour's usual one: ``mysql_native_password``
        on MariaDB (``ed25519`` and, from 11.6, ``parsec`` are installed when
        asked for), ``caching_sha2_password`` on MySQL (``mysql_native_password``
        where the server can load it). ``grants`` defaults to what a replica
        needs: ``REPLICATION SLAVE, REPLICATION CLIENT, SELECT`` plus ``BINLOG
        MONITOR`` on MariaDB.
        """
        plugin = plugin if plugin is not None else self._kind.default_plugin
        grants = grants if grants is not None else self._kind.default_grants
        if not _IDENT.fullmatch(name):
            raise ValueError(f"user name must match {_IDENT.pattern}, got {name!r}")
        if grants and not _GRANTS.fullmatch(grants):
            raise ValueError(f"grants must be a privilege list, got {grants!r}")
        self._kind.ensure_auth_plugin(self.sql, plugin)
        for host in ("%", "localhost"):
            account = f"'{name}'@'{host}'"
            for statement in self._kind.create_user_statements(account, plugin):
                # '%' in the host must be doubled where PyMySQL interpolates arguments.
                if "%s" in statement:
                    self.sql(statement.replace("'%'", "'%%'"), (password,))
                else:
                    self.sql(statement)
            if grants:
                self.sql(f"GRANT {grants} ON *.* TO {account}")
        return format_dsn(name, password, self.host, self.port)

    # -- internals -----------------------------------------------------------------------

    def _prepare(self) -> None:
        with _LIVE_LOCK:
            _LIVE[id(self)] = self
        base = self.base_dir
        base.mkdir(parents=True, exist_ok=True)
        self.tmpdir.mkdir(exist_ok=True)
        if not (self.datadir / "mysql").is_dir():
            template = server_kinds.datadir_template(
                self._kind, self.install, server_kinds.innodb_args(self.variant.extra_args)
            )
            if self.datadir.exists():
                shutil.rmtree(self.datadir)
            shutil.copytree(template / "data", self.datadir, symlinks=True)
            shutil.copyfile(template / PASSWORD_FILE, base / PASSWORD_FILE)
            self._password = None
        key_file = self.key_file
        if key_file is not None and not key_file.exists():
            write_key_file(key_file)
        if self.variant.tls and not (self.server_key and self.server_key.exists()):
            write_tls_files(base / "tls")

    def _launch_on(self, port: int, retry_for: float) -> None:
        deadline = time.monotonic() + retry_for
        while True:
            try:
                self._launch(port)
                return
            except PortInUseError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _launch(self, port: int) -> None:
        cmd = self.command(port)
        log_offset = self.error_log.stat().st_size if self.error_log.exists() else 0
        console = self.base_dir / f"{self._kind.daemon}.out"
        self._process.launch(cmd, console)
        self._process.wait_ready(
            self._probe,
            timeout=self.startup_timeout,
            context=f"on port {port} (datadir {self.datadir}).\ncommand: {' '.join(cmd)}",
            error_log=self.error_log,
            log_offset=log_offset,
            console=console,
        )

    def _probe(self) -> bool:
        try:
            probe = pymysql.connect(
                unix_socket=self.socket, user=self.user, password=self.password, connect_timeout=2
            )
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] == 1045:
                raise ServerStartError(
                    f"{self._kind.daemon} refuses the stored root password "
                    f"({self.base_dir / PASSWORD_FILE}): {exc}"
                ) from exc
            return False
        probe.close()
        return True

    def _connect_kwargs(self) -> dict[str, Any]:
        return {"unix_socket": self.socket, "user": self.user, "password": self.password}

    def _connection(self) -> pymysql.connections.Connection[Any]:
        if self._conn is not None:
            try:
                self._conn.ping(reconnect=False)
            except pymysql.err.Error:
                self._drop_connection()
        if self._conn is None:
            self._conn = pymysql.connect(
                autocommit=True, charset="utf8mb4", connect_timeout=10, **self._connect_kwargs()
            )
        return self._conn

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _binlog_dir(self) -> Path:
        return self.datadir


#: The first name of :class:`DatabaseServer`, from when it ran MariaDB only.
MariaDBServer = DatabaseServer


class ExternalServer(DatabaseServer):
    """An existing primary given by a DSN; process and datadir operations raise."""

    def __init__(self, dsn: str, variant: ServerVariant | None = None) -> None:
        super().__init__(variant)
        host, port, user, password = parse_dsn(dsn)
        self.host = host
        self.user = user
        self._port = port
        self._password = password

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.host}:{self._port}>"

    @property
    def running(self) -> bool:
        return True

    @property
    def base_dir(self) -> Path:
        raise ServerStateError(f"{self!r} is not started by this process: no local files")

    @property
    def datadir(self) -> Path:
        raise ServerStateError(f"{self!r} is not started by this process: no datadir")

    @property
    def socket(self) -> str:
        raise ServerStateError(f"{self!r} is reached over TCP only: no unix socket")

    def start(self) -> None:
        """Check that the server answers (and raise ServerStartError if not)."""
        try:
            self.sql("SELECT 1")
        except pymysql.err.Error as exc:
            raise ServerStartError(
                f"cannot connect to {self.host}:{self.port} as {self.user}: {exc}"
            ) from exc

    def stop(self, timeout: float = 60.0) -> None:
        with self._lock:
            self._drop_connection()

    def kill(self) -> None:
        raise ServerStateError(f"{self!r} is not started by this process: cannot kill it")

    def restart(self, kill: bool = False) -> None:
        raise ServerStateError(f"{self!r} is not started by this process: cannot restart it")

    def cleanup(self) -> None:
        self.stop()

    def _connect_kwargs(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password}

    def _binlog_dir(self) -> Path:
        rows = self.sql("SELECT @@log_bin_basename")
        basename = rows[0][0] if rows else None
        if not basename:
            raise ServerStateError(f"{self!r} has no binary log (log_bin is OFF)")
        directory = Path(str(basename)).parent
        if not os.access(directory, os.R_OK | os.X_OK):
            raise ServerStateError(
                f"binlog files of {self!r} live in {directory} on the server host and are not "
                "readable from here; binlog_files() needs a server started by this process"
            )
        return directory
