"""Provisioned server prefixes: what makes one, what it is, and where it lives.

- :class:`Recipe` (:data:`RECIPES`, :func:`recipe`): which Debian packages make
  one server version, and which binaries must run;
- :class:`Machine` (:func:`machine`): the Debian architecture, multiarch
  triplet and dynamic loader of a machine;
- :class:`Prefix`: a provisioned prefix, and how to run its binaries through
  its own dynamic loader;
- :func:`cache_root` and :func:`prefix_path`: the server cache
  (``$REPLICA_CLIENT_SERVER_CACHE`` or the XDG cache directory) and the
  prefix of a recipe in it;
- :class:`ProvisionError`, which every provisioning failure raises.

:mod:`~replica_client.testing.provision` makes the prefixes (and re-exports
these names). Only the standard library is imported.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ServerStartError

__all__ = [
    "CACHE_ENV",
    "RECIPES",
    "Machine",
    "Prefix",
    "ProvisionError",
    "Recipe",
    "cache_root",
    "machine",
    "prefix_path",
    "recipe",
]

CACHE_ENV = "REPLICA_CLIENT_SERVER_CACHE"


class ProvisionError(ServerStartError):
    """A prefix could not be provisioned; the message says what failed and what to do."""


@dataclass(frozen=True, slots=True)
class Recipe:
    """Which Debian packages make one server version, and which binaries must run."""

    flavor: str
    version: str
    suite: str
    #: Downloaded with their dependencies (less what ``apt._NOT_NEEDED`` matches).
    packages: tuple[str, ...]
    #: Downloaded alone: plugins and tools whose other dependencies are not wanted.
    without_dependencies: tuple[str, ...]
    server: str
    binlog_tool: str
    client_tool: str
    download_mb: int

    @property
    def name(self) -> str:
        """``<flavor>-<version>``: the prefix's directory name."""
        return f"{self.flavor}-{self.version}"


RECIPES: Mapping[tuple[str, str], Recipe] = {
    ("mariadb", "11.8"): Recipe(
        flavor="mariadb",
        version="11.8",
        suite="trixie",
        packages=("mariadb-server-core", "mariadb-client-core"),
        # mariadb-server: auth_parsec, auth_ed25519, file_key_management plugins;
        # mariadb-client: mariadb-binlog, mariadb-dump, mariadb-admin.
        without_dependencies=("mariadb-server", "mariadb-client"),
        server="usr/sbin/mariadbd",
        binlog_tool="usr/bin/mariadb-binlog",
        client_tool="usr/bin/mariadb",
        download_mb=20,
    ),
    ("mysql", "9.7"): Recipe(
        flavor="mysql",
        version="9.7",
        # sid carries a MariaDB 11.8 of another build too: never mix its lists with trixie's.
        suite="sid",
        packages=("mysql-server-core", "mysql-client-core"),
        without_dependencies=(),
        server="usr/sbin/mysqld",
        binlog_tool="usr/bin/mysqlbinlog",
        client_tool="usr/bin/mysql",
        download_mb=55,
    ),
}


@dataclass(frozen=True, slots=True)
class Machine:
    """The Debian architecture, multiarch triplet and dynamic loader of a machine."""

    arch: str
    triplet: str
    loader: str


_MACHINES = {
    "x86_64": Machine("amd64", "x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
    "aarch64": Machine("arm64", "aarch64-linux-gnu", "ld-linux-aarch64.so.1"),
}
_MACHINE_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


def machine(name: str | None = None) -> Machine:
    """The :class:`Machine` for ``name`` (default: this one); ProvisionError if unknown."""
    raw = name if name is not None else platform.machine()
    key = _MACHINE_ALIASES.get(raw.lower(), raw.lower())
    found = _MACHINES.get(key)
    if found is None or not sys.platform.startswith("linux"):
        raise ProvisionError(
            f"server binaries are provisioned from Debian packages for Linux on "
            f"{' and '.join(_MACHINES)} only; this machine is {sys.platform}/{raw}. "
            f"Install the server yourself, or run the tests on an x86_64 or aarch64 Linux machine"
        )
    return found


def recipe(flavor: str, version: str) -> Recipe:
    """The :class:`Recipe` for ``flavor`` and ``version``; ProvisionError if there is none."""
    found = RECIPES.get((flavor, version))
    if found is None:
        known = ", ".join(r.name for r in RECIPES.values())
        raise ProvisionError(f"no provisioning recipe for {flavor}-{version}; known: {known}")
    return found


@dataclass(frozen=True, slots=True)
class Prefix:
    """A provisioned prefix: its root, what made it, and how to run its binaries."""

    root: Path
    recipe: Recipe
    machine: Machine
    stamp: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def libdir(self) -> Path:
        return self.root / "usr" / "lib" / self.machine.triplet

    @property
    def loader(self) -> Path:
        return self.libdir / self.machine.loader

    @property
    def packages(self) -> dict[str, str]:
        """Package name -> Debian version, as unpacked."""
        return dict(self.stamp.get("packages", {}))

    @property
    def server_version(self) -> str:
        """The server's version from its ``--version``, e.g. ``11.8.9-MariaDB-0+deb13u1``."""
        return str(self.stamp.get("server_version", ""))

    def path(self, relative: str) -> Path:
        return self.root / relative

    def runner(self) -> list[str]:
        """The loader and its library path: put it before any binary of the prefix."""
        return [str(self.loader), "--library-path", str(self.libdir)]

    def argv(self, relative: str) -> list[str]:
        """The command that runs the prefix's binary ``relative`` (e.g. ``usr/sbin/mysqld``)."""
        return [*self.runner(), str(self.root / relative)]


# -- where things live ------------------------------------------------------------------------


def cache_root(cache: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding every prefix: ``cache``, env, or the XDG cache directory."""
    if cache is not None:
        return Path(cache).expanduser().resolve()
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "replica-client" / "servers").resolve()


def prefix_path(flavor: str, version: str, cache: str | os.PathLike[str] | None = None) -> Path:
    """Where the prefix of ``flavor``-``version`` lives (whether or not it exists)."""
    return cache_root(cache) / recipe(flavor, version).name
