"""pytest plugin (``pytest11`` entry point ``replica_client``): real database primaries.

Fixtures, both session-scoped:

- ``mariadb_primary``: the default :class:`ServerVariant` (the machine's
  MariaDB; binlog on, ROW, FULL row image and metadata, CRC32, semi-sync
  primary enabled).
- ``mariadb_primary_factory``: ``factory(variant) -> DatabaseServer``, one
  server per distinct variant for the whole session;
  ``factory(ServerVariant())`` is the ``mariadb_primary`` object,
  ``factory(ServerVariant(flavor="mysql", version="9.7"))`` a MySQL 9.7 primary,
  ``factory(ServerVariant(flavor="mariadb", version="11.8"))`` a MariaDB 11.8
  one (both provisioned from Debian packages into the server cache on first
  use: :mod:`replica_client.testing.provision`).

And one per test:

- ``binlog_stream``: a :class:`~replica_client.BinlogStream` connected to
  ``mariadb_primary`` and positioned at "now" (what the test writes after the
  fixture is set up, it sees), closed after the test. Needs pytest-asyncio.
  :func:`take_changes` reads the next ``n`` changes with a timeout.

For a seeded database: ``stream = await open_snapshot(server, "db.t")`` reads
the tables' existing rows first; :func:`take_snapshot` returns them (typed as
the stream types them), :func:`take_changes` then the changes after them.

The server objects expose ``host``, ``port``, ``user``, ``password``, ``dsn``,
``flavor``, ``version`` and ``sql(query, args)`` / ``sql_many(statements)`` to
run SQL (autocommit).

Where the default variant's server comes from, in order:

1. env ``REPLICA_CLIENT_TEST_DSN=mariadb://user:pass@host:port``: that existing
   primary serves the default variant (an :class:`ExternalServer`: no restart,
   and ``binlog_files()`` only where its binlog directory is readable here);
2. ``mariadbd`` on PATH or in the sbin directories: a private server;
3. a Docker engine plus ``testcontainers``: a container;
4. otherwise the test FAILS with a message saying what to install.

A variant with a ``version`` always runs from its provisioned prefix. When
provisioning is impossible (no apt, no mirror) the test FAILS with the reason.
Nothing here ever skips: a suite that cannot reach a server must not pass.

Every server is stopped when the session ends (and at interpreter exit).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from . import provision
from .containers import ContainerServer
from .errors import ServerStartError, ServerStateError
from .server import DatabaseServer, ExternalServer
from .server_kinds import find_mariadbd
from .variant import ServerVariant

if TYPE_CHECKING:
    from ..aio import BinlogStream
    from ..changes import Change

__all__ = [
    "DSN_ENV",
    "PrimaryFactory",
    "binlog_stream",
    "open_snapshot",
    "take_changes",
    "take_snapshot",
    "mariadb_primary",
    "mariadb_primary_factory",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_report_header",
]

DSN_ENV = "REPLICA_CLIENT_TEST_DSN"
_FIXTURES = frozenset({"mariadb_primary", "mariadb_primary_factory", "binlog_stream"})
#: server_ids of the fixture's replicas (unique per process, clear of the usual ranges).
_STREAM_IDS = itertools.count(20000 + (os.getpid() % 1000) * 100)
_TAKERS: weakref.WeakKeyDictionary[BinlogStream, _Taker] = weakref.WeakKeyDictionary()
_NO_SERVER = (
    "no MariaDB server for the integration tests: set {env}=mariadb://user:pass@host:port, "
    "install MariaDB (Debian/Ubuntu: apt-get install mariadb-server; mariadbd is looked up "
    "on PATH and in /usr/sbin), or provide Docker with the testcontainers package"
)


class PrimaryFactory:
    """Starts and caches one server per :class:`ServerVariant` for a test session."""

    def __init__(self, external_dsn: str | None = None) -> None:
        self.external_dsn = external_dsn
        self._servers: dict[ServerVariant, DatabaseServer] = {}
        self._failures: dict[ServerVariant, str] = {}
        self._lock = threading.Lock()

    def __call__(self, variant: ServerVariant | None = None) -> DatabaseServer:
        """The running server for ``variant``; fails the calling test if none can start."""
        variant = variant if variant is not None else ServerVariant()
        with self._lock:
            if variant in self._failures:
                pytest.fail(self._failures[variant], pytrace=False)
            server = self._servers.get(variant)
            try:
                if server is None:
                    server = self._new_server(variant)
                    self._servers[variant] = server
                # A test may have stopped or killed it; bring it back for the next one.
                server.start()
            except (ServerStartError, ServerStateError) as exc:
                message = f"{variant.server_name} primary ({variant.label}) is not available: {exc}"
                self._failures[variant] = message
                pytest.fail(message, pytrace=False)
            return server

    def _new_server(self, variant: ServerVariant) -> DatabaseServer:
        if self.external_dsn and variant == ServerVariant():
            return ExternalServer(self.external_dsn)
        if variant.provisioned or find_mariadbd() is not None:
            return DatabaseServer(variant)
        if ContainerServer.docker_available():
            return ContainerServer(variant)
        raise ServerStartError(_NO_SERVER.format(env=DSN_ENV))

    @property
    def servers(self) -> dict[ServerVariant, DatabaseServer]:
        """The servers started so far, by variant."""
        return dict(self._servers)

    def close(self) -> None:
        """Stop every server and remove its temporary files."""
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        errors: list[BaseException] = []
        for server in servers:
            try:
                server.close()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]


@pytest.fixture(scope="session")
def mariadb_primary_factory() -> Iterator[PrimaryFactory]:
    """``factory(variant) -> DatabaseServer``: one running server per variant, per session."""
    factory = PrimaryFactory(os.environ.get(DSN_ENV) or None)
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture(scope="session")
def mariadb_primary(mariadb_primary_factory: PrimaryFactory) -> DatabaseServer:
    """The default-variant primary (private, external by DSN, or in a container)."""
    return mariadb_primary_factory(ServerVariant())


@pytest_asyncio.fixture(loop_scope="function")
async def binlog_stream(mariadb_primary: DatabaseServer) -> AsyncIterator[BinlogStream]:
    """A stream of ``mariadb_primary``'s binlog from "now"; closed after the test."""
    from ..aio import connect

    stream = await connect(
        host=mariadb_primary.host,
        port=mariadb_primary.port,
        user=mariadb_primary.user,
        password=mariadb_primary.password,
        server_id=next(_STREAM_IDS),
        start="now",
        heartbeat_period=1.0,
        connect_timeout=20.0,
    )
    try:
        yield stream
    finally:
        await stream.aclose()


class _Taker:
    """One stream's ``changes()``, and what :func:`take_snapshot` read past."""

    def __init__(self, stream: BinlogStream) -> None:
        self.changes = stream.changes()
        self.buffered: deque[Change] = deque()  # changes that came between reads
        self.ahead: asyncio.Future[Change] | None = None  # the change after the reads

    async def next(self) -> Change:
        if self.buffered:
            return self.buffered.popleft()
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            return await ahead
        return await anext(self.changes)


def _taker(stream: BinlogStream) -> _Taker:
    taker = _TAKERS.get(stream)
    if taker is None:
        taker = _TAKERS[stream] = _Taker(stream)
    return taker


async def take_changes(stream: BinlogStream, n: int, timeout: float = 10.0) -> list[Change]:
    """The next ``n`` row changes of ``stream``; ``TimeoutError`` if they do not come.

    Calls on the same stream continue where the last one stopped (changes of a
    rows event not yet taken are kept).
    """
    taker = _taker(stream)
    out: list[Change] = []
    async with asyncio.timeout(timeout):
        while len(out) < n:
            out.append(await taker.next())
    return out


async def open_snapshot(
    server: DatabaseServer, tables: str | Sequence[str], **options: Any
) -> BinlogStream:
    """A stream of ``server`` that first reads ``tables``' rows (``"db.t"`` names),
    then streams their changes: ``await take_snapshot(stream)``, then
    :func:`take_changes`. Options go to ``connect`` (e.g. ``snapshot="chunked"``);
    close it with ``await stream.aclose()`` or ``async with``."""
    from ..aio import connect

    names = (tables,) if isinstance(tables, str) else tuple(tables)
    settings: dict[str, Any] = {
        "host": server.host,
        "port": server.port,
        "user": server.user,
        "password": server.password,
        "server_id": next(_STREAM_IDS),
        "heartbeat_period": 1.0,
        "connect_timeout": 20.0,
        "snapshot": True,
        "snapshot_tables": names,
        **options,
    }
    return await connect(**settings)


async def take_snapshot(stream: BinlogStream, timeout: float = 30.0) -> list[Change]:
    """Every row a stream opened with ``snapshot=`` reads (``op="read"``), once they
    are all read; the stream's changes that came between them in chunked mode are
    left for :func:`take_changes`. ``TimeoutError`` if the reads do not end."""
    taker = _taker(stream)
    reads: list[Change] = []
    async with asyncio.timeout(timeout):
        while True:
            if taker.buffered:
                raise RuntimeError("take_snapshot after take_changes: the reads are mixed in")
            ahead = taker.ahead or asyncio.ensure_future(anext(taker.changes))
            taker.ahead = None
            # Once the snapshot is over the next change waits for the primary: keep it.
            while not ahead.done() and stream.snapshot_state is not None:
                await asyncio.wait({ahead}, timeout=0.01)
            if not ahead.done():
                taker.ahead = ahead
                return reads
            change = ahead.result()
            if change.op == "read":
                reads.append(change)
            else:
                taker.buffered.append(change)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs a real database primary")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a primary as ``integration``."""
    for item in items:
        if _FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


def pytest_report_header() -> list[str]:
    dsn = os.environ.get(DSN_ENV)
    binary = find_mariadbd()
    if dsn:
        lines = [f"mariadb primary: external ({DSN_ENV} is set)"]
    elif binary:
        lines = [f"mariadb primary: private server from {binary}"]
    else:
        lines = ["mariadb primary: testcontainers if Docker is available, else tests fail"]
    for recipe in provision.RECIPES.values():
        root = provision.prefix_path(recipe.flavor, recipe.version)
        state = "provisioned" if (root / provision.STAMP).is_file() else "provisioned on first use"
        lines.append(f"{recipe.name} primary: {root} ({state})")
    return lines
