"""A private MariaDB primary for integration tests, started from the local install.

Contract:

- :class:`ServerVariant` is a frozen, hashable description of how the primary
  writes its binary log (row metadata, row image, checksum, compression,
  encryption, TLS, extra ``mariadbd`` flags).
- :class:`MariaDBServer` owns one ``mariadbd`` process: a fresh datadir (copied
  from a per-process pristine template made once by ``mariadb-install-db``), a
  free loopback port, binlog on in ROW format, semi-sync primary enabled with a
  short timeout. ``start()`` blocks until the server accepts connections and
  raises :class:`ServerStartError` with the tail of the error log when it does
  not. ``stop()`` shuts it down with SIGTERM, ``kill()`` with SIGKILL (process
  group), ``restart()`` keeps datadir and port. Every started server is also
  stopped at interpreter exit, and the process gets SIGTERM if the Python
  process that started it dies.
- :meth:`MariaDBServer.sql` is a synchronous control channel (PyMySQL,
  autocommit) for setting up data and checking state; it is not the code under
  test.
- :class:`ExternalServer` wraps an existing primary given by a DSN
  (``mariadb://user:pass@host:port``) behind the same attributes; operations that
  need the process or the datadir raise :class:`ServerStateError`.
- :class:`ContainerServer` runs the server in a Docker container through
  ``testcontainers`` where a Docker engine is available.

Every MariaDB binary is called with ``--no-defaults`` first so that the
machine's option files never leak in.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import datetime
import importlib
import ipaddress
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pymysql

__all__ = [
    "ContainerServer",
    "ExternalServer",
    "MariaDBServer",
    "ServerStartError",
    "ServerStateError",
    "ServerVariant",
    "find_mariadb_install_db",
    "find_mariadbd",
    "parse_dsn",
]

_ROW_METADATA = ("MINIMAL", "FULL", "NO_LOG")
_ROW_IMAGE = ("FULL", "MINIMAL", "NOBLOB")
_CHECKSUM = ("CRC32", "NONE")
_DEFAULT_GRANTS = "REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR, SELECT"
_SEARCH_DIRS = (
    "/usr/sbin",
    "/usr/local/sbin",
    "/usr/bin",
    "/usr/local/bin",
    "/usr/local/mysql/bin",
)
_IDENT = re.compile(r"[A-Za-z0-9_.\-]{1,80}")
_PLUGIN = re.compile(r"[a-z0-9_]{1,64}")
_GRANTS = re.compile(r"[A-Za-z ,_]+")
_PORT_IN_USE = ("Address already in use", "Bind on TCP/IP port", "Do you already have another")
_LOG_TAIL_LINES = 40


class ServerStartError(RuntimeError):
    """The server could not be initialized or started; the message carries its log."""


class ServerStateError(RuntimeError):
    """The operation does not apply to this server or to its current state."""


class _PortInUseError(ServerStartError):
    pass


@dataclass(frozen=True, slots=True)
class ServerVariant:
    """How the primary writes its binary log. Frozen and hashable: a cache key."""

    row_metadata: str = "FULL"
    row_image: str = "FULL"
    checksum: str = "CRC32"
    compress: bool = False
    encrypt: bool = False
    tls: bool = False
    extra_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, allowed in (
            ("row_metadata", _ROW_METADATA),
            ("row_image", _ROW_IMAGE),
            ("checksum", _CHECKSUM),
        ):
            value = str(getattr(self, name)).upper()
            if value not in allowed:
                raise ValueError(f"ServerVariant.{name} must be one of {allowed}, got {value!r}")
            object.__setattr__(self, name, value)
        if isinstance(self.extra_args, str):
            raise TypeError("ServerVariant.extra_args must be a sequence of flags, not a string")
        object.__setattr__(self, "extra_args", tuple(str(a) for a in self.extra_args))

    @property
    def label(self) -> str:
        """A short id naming what differs from the default, e.g. ``row_image=MINIMAL``."""
        default = ServerVariant()
        parts: list[str] = []
        for name in ("row_metadata", "row_image", "checksum"):
            value = getattr(self, name)
            if value != getattr(default, name):
                parts.append(f"{name}={value}")
        parts.extend(name for name in ("compress", "encrypt", "tls") if getattr(self, name))
        parts.extend(self.extra_args)
        return ",".join(parts) or "default"

    def binlog_args(self) -> list[str]:
        """The ``mariadbd`` flags of this variant that need no files on disk."""
        args = [
            "--log-bin=mysql-bin",
            "--server-id=1",
            "--binlog-format=ROW",
            f"--binlog-row-image={self.row_image}",
            f"--binlog-row-metadata={self.row_metadata}",
            f"--binlog-checksum={self.checksum}",
            "--binlog-annotate-row-events=ON",
            "--rpl-semi-sync-master-enabled=ON",
            "--rpl-semi-sync-master-timeout=500",
            "--max-allowed-packet=1G",
            "--skip-name-resolve",
        ]
        if self.compress:
            args += ["--log-bin-compress=ON", "--log-bin-compress-min-len=10"]
        return args


def _find_binary(names: Sequence[str], env_var: str, extra_dirs: Iterable[Path] = ()) -> str | None:
    override = os.environ.get(env_var)
    if override:
        return override if os.access(override, os.X_OK) else None
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    for directory in (*extra_dirs, *map(Path, _SEARCH_DIRS)):
        for name in names:
            candidate = directory / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def find_mariadbd() -> str | None:
    """Path of ``mariadbd`` (env ``REPLICA_CLIENT_MARIADBD``, PATH, sbin dirs) or None."""
    return _find_binary(("mariadbd", "mysqld"), "REPLICA_CLIENT_MARIADBD")


def find_mariadb_install_db(mariadbd: str | None = None) -> str | None:
    """Path of ``mariadb-install-db``, looked up beside ``mariadbd`` too, or None."""
    extra: list[Path] = []
    if mariadbd:
        bindir = Path(mariadbd).resolve().parent
        extra += [bindir, bindir.parent / "bin", bindir.parent / "scripts"]
    return _find_binary(
        ("mariadb-install-db", "mysql_install_db"), "REPLICA_CLIENT_MARIADB_INSTALL_DB", extra
    )


def parse_dsn(dsn: str) -> tuple[str, int, str, str]:
    """Split ``mariadb://user:pass@host:port`` into ``(host, port, user, password)``."""
    parts = urlsplit(dsn)
    if parts.scheme not in ("mariadb", "mysql") or not parts.hostname:
        # The DSN itself is not echoed: it may hold a password.
        raise ValueError("expected a DSN like mariadb://user:pass@host:port")
    return (
        parts.hostname,
        parts.port or 3306,
        unquote(parts.username or "root"),
        unquote(parts.password or ""),
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, offset: int = 0, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace").splitlines()
    return "\n".join(text[-lines:])


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(
        cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, timeout=300
    )
    if proc.returncode != 0:
        output = "\n".join((proc.stdout + proc.stderr).splitlines()[-_LOG_TAIL_LINES:])
        raise ServerStartError(
            f"{what} failed with exit code {proc.returncode}: {' '.join(cmd)}\n{output}"
        )


# -- parent-death signal: the server goes away with the process that started it -------

_PR_SET_PDEATHSIG = 1


def _set_parent_death_signal() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def _preexec() -> Any:
    # The signal fires when the *thread* that forked exits, so only tie the server
    # to the main thread, which lives as long as the process.
    if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
        return _set_parent_death_signal
    return None


# -- pristine datadir templates, one per (binary, innodb flags) per process ------------

_TEMPLATE_LOCK = threading.Lock()
_TEMPLATES: dict[tuple[str, tuple[str, ...]], Path] = {}
_PASSWORD_FILE = "root-password"


def _innodb_args(extra_args: Sequence[str]) -> tuple[str, ...]:
    return tuple(a for a in extra_args if a.startswith(("--innodb", "--loose-innodb")))


_BASE_INNODB = ("--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M")


def _bootstrap_sql(password: str) -> str:
    literal = password.replace("\\", "\\\\").replace("'", "\\'")
    lines = [
        "DELETE FROM mysql.global_priv WHERE Host NOT IN ('localhost', '127.0.0.1', '::1');",
        "DELETE FROM mysql.proxies_priv WHERE Host NOT IN ('localhost', '127.0.0.1', '::1');",
        "FLUSH PRIVILEGES;",
        *(
            f"ALTER USER 'root'@'{host}' IDENTIFIED BY '{literal}';"
            for host in ("localhost", "127.0.0.1", "::1")
        ),
        "CREATE DATABASE IF NOT EXISTS test;",
    ]
    return "\n".join(lines) + "\n"


def _template(mariadbd: str, innodb: tuple[str, ...]) -> Path:
    """An initialized, never started datadir (``<dir>/data``) plus its root password."""
    key = (mariadbd, innodb)
    with _TEMPLATE_LOCK:
        cached = _TEMPLATES.get(key)
        if cached is not None and (cached / "data").is_dir():
            return cached
        install_db = find_mariadb_install_db(mariadbd)
        if install_db is None:
            raise ServerStartError(
                f"mariadb-install-db not found (looked on PATH and beside {mariadbd}); "
                "install the mariadb-server package or set REPLICA_CLIENT_MARIADB_INSTALL_DB"
            )
        _sweep_stale_dirs()
        root = _owned_temp_dir(_TEMPLATE_PREFIX)
        password = secrets.token_urlsafe(18)
        (root / _PASSWORD_FILE).write_text(password)
        sql_file = root / "bootstrap.sql"
        sql_file.write_text(_bootstrap_sql(password))
        cmd = [
            install_db,
            "--no-defaults",
            f"--datadir={root / 'data'}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            f"--extra-file={sql_file}",
            *_BASE_INNODB,
            *innodb,
        ]
        if os.geteuid() == 0:
            cmd.insert(2, "--user=root")
        try:
            _run(cmd, "mariadb-install-db")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        _TEMPLATES[key] = root
        return root


_TEMPLATE_PREFIX = "replica-client-template-"
_SERVER_PREFIX = "replica-client-mariadb-"
_OWNER_FILE = "owner.pid"
_swept = False


def _owned_temp_dir(prefix: str) -> Path:
    """A new temporary directory that records the pid of the process owning it."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    (path / _OWNER_FILE).write_text(str(os.getpid()))
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale_dirs() -> None:
    """Once per process: remove temp dirs left by harness processes that were killed."""
    global _swept
    if _swept:
        return
    _swept = True
    root = Path(tempfile.gettempdir())
    for prefix in (_TEMPLATE_PREFIX, _SERVER_PREFIX):
        for path in root.glob(prefix + "*"):
            try:
                pid = int((path / _OWNER_FILE).read_text())
            except (OSError, ValueError):
                continue
            if pid != os.getpid() and not _pid_alive(pid):
                shutil.rmtree(path, ignore_errors=True)


def _remove_templates() -> None:
    with _TEMPLATE_LOCK:
        for root in _TEMPLATES.values():
            shutil.rmtree(root, ignore_errors=True)
        _TEMPLATES.clear()


# -- TLS and key material ---------------------------------------------------------------


def _write_tls_files(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1/localhost, PEM files in ``directory``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    not_before, not_after = now - datetime.timedelta(days=1), now + datetime.timedelta(days=3650)

    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "replica_client test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )

    ca_path, cert_path, key_path = (
        directory / "ca.pem",
        directory / "server-cert.pem",
        directory / "server-key.pem",
    )
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return ca_path, cert_path, key_path


def _write_key_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{key_id};{secrets.token_hex(32)}\n" for key_id in (1, 2)))
    path.chmod(0o600)


# -- live servers, stopped at exit --------------------------------------------------------

_LIVE_LOCK = threading.Lock()
_LIVE: dict[int, MariaDBServer] = {}


def _stop_everything() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE.values())
    for server in servers:
        with contextlib.suppress(Exception):
            server.close()
    _remove_templates()


def _forget_inherited() -> None:
    # A forked child (multiprocessing, a test that forks) owns none of its parent's
    # servers or templates: it must not stop or delete them when it exits.
    global _LIVE_LOCK, _TEMPLATE_LOCK
    _LIVE_LOCK, _TEMPLATE_LOCK = threading.Lock(), threading.Lock()
    _LIVE.clear()
    _TEMPLATES.clear()


atexit.register(_stop_everything)
os.register_at_fork(after_in_child=_forget_inherited)


class MariaDBServer:
    """One private ``mariadbd`` primary; see the module docstring for the contract."""

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
        self._requested_base_dir = Path(base_dir).resolve() if base_dir is not None else None
        self._base_dir: Path | None = self._requested_base_dir
        self._owns_base_dir = False
        self._mariadbd = mariadbd
        self.startup_timeout = startup_timeout
        self._port: int | None = None
        self._password: str | None = None
        self._socket: str | None = None
        self._socket_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
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
    def base_dir(self) -> Path:
        """Directory holding datadir, socket, key and certificate files."""
        if self._base_dir is None:
            self._base_dir = _owned_temp_dir(_SERVER_PREFIX)
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
            stored = self.base_dir / _PASSWORD_FILE
            if not stored.exists():
                raise ServerStateError(f"{self!r} has no root password yet: call start() first")
            self._password = stored.read_text().strip()
        return self._password

    @property
    def socket(self) -> str:
        """Unix socket path (kept short: sockets paths are limited to ~107 bytes)."""
        if self._socket is None:
            candidate = self.base_dir / "mariadbd.sock"
            if len(str(candidate)) > 100:
                self._socket_dir = Path(tempfile.mkdtemp(prefix="rc-sock-"))
                candidate = self._socket_dir / "mariadbd.sock"
            self._socket = str(candidate)
        return self._socket

    @property
    def pid_file(self) -> Path:
        return self.base_dir / "mariadbd.pid"

    @property
    def error_log(self) -> Path:
        return self.datadir / "error.log"

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
        return _dsn(self.user, self.password, self.host, self.port)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running and self._proc is not None else None

    # -- lifecycle ---------------------------------------------------------------------

    def command(self, port: int) -> list[str]:
        """The full ``mariadbd`` command line for ``port``."""
        binary = self._binary()
        cmd = [binary, "--no-defaults"]
        if os.geteuid() == 0:
            cmd.append("--user=root")
        cmd += [
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
            *self.variant.binlog_args(),
            *_BASE_INNODB,
            "--innodb-flush-log-at-trx-commit=2",
            "--sync-binlog=0",
            "--skip-innodb-doublewrite",
        ]
        if self.variant.encrypt:
            cmd += [
                "--plugin-load-add=file_key_management",
                f"--file-key-management-filename={self.key_file}",
                "--encrypt-binlog=ON",
            ]
        if self.variant.tls:
            cmd += [
                f"--ssl-ca={self.ca_cert}",
                f"--ssl-cert={self.server_cert}",
                f"--ssl-key={self.server_key}",
            ]
        cmd += self.variant.extra_args
        return cmd

    def start(self) -> None:
        """Initialize the datadir if needed and start; block until it accepts connections."""
        with self._lock:
            if self.running:
                return
            began = time.monotonic()
            self._prepare()
            if self._port is not None:
                self._launch_on(self._port, retry_for=10.0)
            else:
                for attempt in range(5):
                    port = _free_port()
                    try:
                        self._launch(port)
                    except _PortInUseError:
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
            proc = self._proc
            if proc is None:
                return
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self._kill_group(proc)
            self._forget(proc)

    def kill(self) -> None:
        """SIGKILL the server's process group (a crash, for recovery tests) and reap it."""
        with self._lock:
            self._drop_connection()
            proc = self._proc
            if proc is None:
                return
            if proc.poll() is None:
                self._kill_group(proc)
            self._forget(proc)

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

    def __enter__(self) -> MariaDBServer:
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

    def create_user(
        self,
        name: str,
        password: str,
        plugin: str = "mysql_native_password",
        grants: str = _DEFAULT_GRANTS,
    ) -> str:
        """(Re)create ``name``@``%`` and ``name``@``localhost``; return its DSN.

        ``plugin`` is ``mysql_native_password`` or ``ed25519`` (any auth plugin that
        takes ``USING PASSWORD(...)`` works); a missing plugin is installed.
        """
        if not _IDENT.fullmatch(name):
            raise ValueError(f"user name must match {_IDENT.pattern}, got {name!r}")
        if not _PLUGIN.fullmatch(plugin):
            raise ValueError(f"plugin must match {_PLUGIN.pattern}, got {plugin!r}")
        if grants and not _GRANTS.fullmatch(grants):
            raise ValueError(f"grants must be a privilege list, got {grants!r}")
        self._ensure_auth_plugin(plugin)
        for host in ("%", "localhost"):
            account = f"'{name}'@'{host}'"
            # '%' in the host must be doubled where PyMySQL interpolates arguments.
            self.sql(
                f"CREATE OR REPLACE USER {account.replace('%', '%%')} "
                f"IDENTIFIED VIA {plugin} USING PASSWORD(%s)",
                (password,),
            )
            if grants:
                self.sql(f"GRANT {grants} ON *.* TO {account}")
        return _dsn(name, password, self.host, self.port)

    # -- internals -----------------------------------------------------------------------

    def _binary(self) -> str:
        if self._mariadbd is None:
            found = find_mariadbd()
            if found is None:
                raise ServerStartError(
                    "mariadbd not found on PATH or in /usr/sbin; install mariadb-server "
                    "or set REPLICA_CLIENT_MARIADBD"
                )
            self._mariadbd = found
        return self._mariadbd

    def _prepare(self) -> None:
        with _LIVE_LOCK:
            _LIVE[id(self)] = self
        base = self.base_dir
        base.mkdir(parents=True, exist_ok=True)
        if not (self.datadir / "mysql").is_dir():
            template = _template(self._binary(), _innodb_args(self.variant.extra_args))
            if self.datadir.exists():
                shutil.rmtree(self.datadir)
            shutil.copytree(template / "data", self.datadir, symlinks=True)
            shutil.copyfile(template / _PASSWORD_FILE, base / _PASSWORD_FILE)
            self._password = None
        key_file = self.key_file
        if key_file is not None and not key_file.exists():
            _write_key_file(key_file)
        if self.variant.tls and not (self.server_key and self.server_key.exists()):
            _write_tls_files(base / "tls")

    def _launch_on(self, port: int, retry_for: float) -> None:
        deadline = time.monotonic() + retry_for
        while True:
            try:
                self._launch(port)
                return
            except _PortInUseError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _launch(self, port: int) -> None:
        cmd = self.command(port)
        log_offset = self.error_log.stat().st_size if self.error_log.exists() else 0
        console = self.base_dir / "mariadbd.out"
        with console.open("ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_preexec(),  # noqa: PLW1509 - only prctl(PR_SET_PDEATHSIG)
            )
        self._proc = proc
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.01
        while True:
            code = proc.poll()
            if code is not None:
                self._forget(proc)
                log = _tail(self.error_log, log_offset) or _tail(console)
                error = _PortInUseError if any(s in log for s in _PORT_IN_USE) else ServerStartError
                raise error(
                    f"mariadbd exited with code {code} during startup on port {port} "
                    f"(datadir {self.datadir}).\ncommand: {' '.join(cmd)}\n"
                    f"error log ({self.error_log}):\n{log}"
                )
            try:
                probe = pymysql.connect(
                    unix_socket=self.socket,
                    user=self.user,
                    password=self.password,
                    connect_timeout=2,
                )
            except pymysql.err.OperationalError as exc:
                if exc.args and exc.args[0] == 1045:
                    self._kill_group(proc)
                    self._forget(proc)
                    raise ServerStartError(
                        f"mariadbd on port {port} refuses the stored root password "
                        f"({self.base_dir / _PASSWORD_FILE}): {exc}"
                    ) from exc
            else:
                probe.close()
                return
            if time.monotonic() > deadline:
                self._kill_group(proc)
                self._forget(proc)
                raise ServerStartError(
                    f"mariadbd did not accept connections within {self.startup_timeout:.0f} s "
                    f"on port {port}.\ncommand: {' '.join(cmd)}\n"
                    f"error log ({self.error_log}):\n{_tail(self.error_log, log_offset)}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.1)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()

    def _forget(self, proc: subprocess.Popen[bytes]) -> None:
        if self._proc is proc:
            self._proc = None

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

    def _ensure_auth_plugin(self, plugin: str) -> None:
        if plugin == "mysql_native_password":
            return
        active = self.sql(
            "SELECT 1 FROM information_schema.PLUGINS "
            "WHERE PLUGIN_NAME = %s AND PLUGIN_STATUS = 'ACTIVE'",
            (plugin,),
        )
        if not active:
            self.sql(f"INSTALL SONAME 'auth_{plugin}'")


def _dsn(user: str, password: str, host: str, port: int) -> str:
    return f"mariadb://{quote(user, safe='')}:{quote(password, safe='')}@{host}:{port}"


class ExternalServer(MariaDBServer):
    """An existing primary given by a DSN; process and datadir operations raise."""

    def __init__(self, dsn: str) -> None:
        super().__init__(ServerVariant())
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


class ContainerServer(ExternalServer):
    """MariaDB in a Docker container (``testcontainers``), for machines without mariadbd.

    Variants that need files on the server (``encrypt``, ``tls``) are not supported.
    """

    image = "mariadb:10.11"

    def __init__(self, variant: ServerVariant | None = None, image: str | None = None) -> None:
        variant = variant if variant is not None else ServerVariant()
        if variant.encrypt or variant.tls:
            raise ServerStateError(f"variant {variant.label} is not supported in a container")
        super().__init__(_dsn("root", secrets.token_urlsafe(18), "127.0.0.1", 3306))
        self.variant = variant
        if image is not None:
            self.image = image
        self._container: Any = None

    def start(self) -> None:
        from testcontainers.core.container import DockerContainer

        container = (
            DockerContainer(self.image)
            .with_env("MARIADB_ROOT_PASSWORD", self.password)
            .with_env("MARIADB_DATABASE", "test")
            .with_exposed_ports(3306)
            .with_command(" ".join(self.variant.binlog_args() + list(self.variant.extra_args)))
        )
        container.start()
        self._container = container
        self.host = str(container.get_container_host_ip())
        self._port = int(container.get_exposed_port(3306))
        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                super().start()
                return
            except ServerStartError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise
                time.sleep(0.5)

    def stop(self, timeout: float = 60.0) -> None:
        super().stop(timeout)
        container, self._container = self._container, None
        if container is not None:
            container.stop()

    def binlog_files(self) -> list[Path]:
        raise ServerStateError(f"{self!r}: binlog files live inside the container")

    @staticmethod
    def docker_available() -> bool:
        """True when ``testcontainers`` is importable and a Docker engine answers."""
        try:
            docker = importlib.import_module("docker")
            importlib.import_module("testcontainers.core.container")
        except ImportError:
            return False
        try:
            client = docker.from_env()
            try:
                return bool(client.ping())
            finally:
                client.close()
        except Exception:
            return False
