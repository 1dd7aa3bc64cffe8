"""Where a server's binaries are: the machine's own ``mariadbd``, or a provisioned prefix.

- :func:`find_mariadbd` and :func:`find_mariadb_install_db` look a binary up
  (an environment variable, PATH, the usual sbin and bin directories, and
  beside ``mariadbd`` for its tools).
- :class:`Install` holds the binaries of one server install and runs each of
  them through the prefix's own dynamic loader where there is one; its
  :meth:`Install.tool` finds a command-line tool of the same install.
- :func:`resolve_install` finds the binaries of a :class:`ServerVariant`: the
  machine's ``mariadbd`` for ``flavor="mariadb", version=None``, else the
  prefix of :mod:`~replica_client.testing.provision` (provisioned on first use,
  once per process).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import provision
from .errors import ServerStartError, ServerStateError

if TYPE_CHECKING:
    from .variant import ServerVariant

__all__ = ["Install", "find_mariadb_install_db", "find_mariadbd", "resolve_install"]

_SEARCH_DIRS = (
    "/usr/sbin",
    "/usr/local/sbin",
    "/usr/bin",
    "/usr/local/bin",
    "/usr/local/mysql/bin",
)


def _find_binary(
    names: Sequence[str], env_var: str | None, extra_dirs: Iterable[Path] = ()
) -> str | None:
    override = os.environ.get(env_var) if env_var else None
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


def _beside(binary: Path) -> list[Path]:
    bindir = binary.resolve().parent
    return [bindir, bindir.parent / "bin", bindir.parent / "scripts"]


def find_mariadb_install_db(mariadbd: str | None = None) -> str | None:
    """Path of ``mariadb-install-db``, looked up beside ``mariadbd`` too, or None."""
    extra = _beside(Path(mariadbd)) if mariadbd else []
    return _find_binary(
        ("mariadb-install-db", "mysql_install_db"), "REPLICA_CLIENT_MARIADB_INSTALL_DB", extra
    )


@dataclass(frozen=True, slots=True)
class Install:
    """The binaries of one server install: the machine's own, or a provisioned prefix."""

    flavor: str
    server: Path
    prefix: provision.Prefix | None = None

    def argv(self, binary: str | os.PathLike[str]) -> list[str]:
        """How to run ``binary`` of this install (through the prefix's loader if any)."""
        return [*self.prefix.runner(), str(binary)] if self.prefix else [str(binary)]

    def tool(self, names: Sequence[str], relative: str | None = None) -> list[str]:
        """The argv of a command-line tool of this install; ServerStateError if there is none."""
        if self.prefix is not None and relative is not None:
            return self.prefix.argv(relative)
        for directory in _beside(self.server):
            for name in names:
                if (directory / name).is_file():
                    return [str(directory / name)]
        found = _find_binary(names, None)
        if found is None:
            raise ServerStateError(
                f"none of {', '.join(names)} is installed beside {self.server} or on PATH"
            )
        return [found]


_INSTALL_LOCK = threading.Lock()
_INSTALLS: dict[tuple[str, str, Path], Install] = {}


def resolve_install(variant: ServerVariant, mariadbd: str | None = None) -> Install:
    """The binaries that run ``variant``; provisions the prefix on first use.

    Raises ServerStartError (ProvisionError for prefixes) saying what to do.
    """
    if variant.version is None:
        binary = mariadbd or find_mariadbd()
        if binary is None:
            raise ServerStartError(
                "mariadbd not found on PATH or in /usr/sbin; install mariadb-server "
                "or set REPLICA_CLIENT_MARIADBD"
            )
        return Install(variant.flavor, Path(binary))
    key = (variant.flavor, variant.version, provision.cache_root())
    with _INSTALL_LOCK:
        found = _INSTALLS.get(key)
        if found is None:
            prefix = provision.provision(variant.flavor, variant.version)
            found = Install(variant.flavor, prefix.path(prefix.recipe.server), prefix)
            _INSTALLS[key] = found
        return found
