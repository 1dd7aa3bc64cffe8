"""Test support: a private MariaDB primary and the pytest plugin that exposes it.

``replica_client.testing.server`` starts ``mariadbd`` from the local install
(:class:`MariaDBServer`, configured by :class:`ServerVariant`);
``replica_client.testing.pytest_plugin`` is registered as a ``pytest11`` entry
point and provides the ``mariadb_primary`` and ``mariadb_primary_factory``
fixtures. Nothing here is imported by the library itself.
"""

from __future__ import annotations

from .server import (
    ContainerServer,
    ExternalServer,
    MariaDBServer,
    ServerStartError,
    ServerStateError,
    ServerVariant,
)

__all__ = [
    "ContainerServer",
    "ExternalServer",
    "MariaDBServer",
    "ServerStartError",
    "ServerStateError",
    "ServerVariant",
]
