"""Shared test configuration.

The MariaDB fixtures (``mariadb_primary``, ``mariadb_primary_factory``) come from
the ``replica_client`` pytest plugin, registered as a ``pytest11`` entry point by
``pip install -e .``. When the package is imported from a source tree without
that install, the plugin is registered here instead.
"""

from __future__ import annotations

import pytest

from replica_client.testing import pytest_plugin

__all__: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(pytest_plugin):
        config.pluginmanager.register(pytest_plugin, "replica_client")
