"""Shared test configuration.

The MariaDB fixtures (``mariadb_primary``, ``mariadb_primary_factory``) come from
the ``replica_client`` pytest plugin, registered as a ``pytest11`` entry point by
``pip install -e .``. When the package is imported from a source tree without
that install, the plugin is registered here instead.

``REPLICA_CLIENT_TEST_LOOP=uvloop`` runs every async test on uvloop's event
loop instead of asyncio's own (``tests/loops.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest

from replica_client.testing import pytest_plugin
from tests.loops import TEST_LOOP, loop_factory

__all__: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(pytest_plugin):
        config.pluginmanager.register(pytest_plugin, "replica_client")
    try:
        loop_factory()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


if TEST_LOOP == "uvloop":
    # (defined only then: the hook may not decline, and asyncio's loop is the default)
    def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item
    ) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
        factory = loop_factory()
        assert factory is not None
        return {"uvloop": factory}
