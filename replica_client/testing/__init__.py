"""Test support: private MariaDB and MySQL primaries and the pytest plugin that exposes them.

Modules, each with one job:

- ``variant``: :class:`ServerVariant`, which server (flavour, version) and how
  it writes its binary log;
- ``server``: :class:`DatabaseServer` (alias :class:`MariaDBServer`) and
  :class:`ExternalServer`, one private server process or an existing primary;
- ``server_kinds``: how each kind of server (MariaDB, MySQL) is run
  (``ServerKind``): command lines, bootstrap, accounts, tools;
- ``provision``: MariaDB 11.8 and MySQL 9.7 from Debian packages into a
  private prefix (also ``python -m replica_client.testing.provision``), with
  ``prefixes`` (recipes, the cache's location), ``apt`` (apt-get on private
  lists) and ``binaries`` (where a server's binaries are);
- ``process``: process lifecycle; ``certs``: TLS and key files;
  ``containers``: :class:`ContainerServer` where Docker is available;
  ``spark_cluster``: a Spark standalone cluster on loopback and the sizes of
  the tasks a driver sent it;
  ``errors``: the error types (DSNs are parsed by :mod:`replica_client.dsn`,
  shared with the command line);
- ``pytest_plugin``: registered as a ``pytest11`` entry point; the
  ``mariadb_primary`` and ``mariadb_primary_factory`` fixtures.

The names below are imported on first use, so importing this package starts
none of the server machinery and never imports pytest. Nothing here is
imported by the library itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .containers import ContainerServer
    from .errors import ServerStartError, ServerStateError
    from .provision import ProvisionError
    from .server import DatabaseServer, ExternalServer, MariaDBServer
    from .variant import ServerVariant

__all__ = [
    "ContainerServer",
    "DatabaseServer",
    "ExternalServer",
    "MariaDBServer",
    "ProvisionError",
    "ServerStartError",
    "ServerStateError",
    "ServerVariant",
]

_HOMES = {
    "ContainerServer": "containers",
    "DatabaseServer": "server",
    "ExternalServer": "server",
    "MariaDBServer": "server",
    "ProvisionError": "provision",
    "ServerStartError": "errors",
    "ServerStateError": "errors",
    "ServerVariant": "variant",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
