"""Shared test configuration.

The MariaDB fixtures (``mariadb_primary``, ``mariadb_primary_factory``) come from
the ``replica_client`` pytest plugin, registered as a ``pytest11`` entry point by
``pip install -e .``. When the package is imported from a source tree without
that install, the plugin is registered here instead.

``REPLICA_CLIENT_TEST_LOOP=uvloop`` runs every async test on uvloop's event
loop instead of asyncio's own (``scripts/test.sh`` runs the streaming suites
so, a second time).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping

import pytest

from replica_client.testing import pytest_plugin

__all__: list[str] = []

#: The event loop the async tests run on: "asyncio" (the default) or "uvloop".
TEST_LOOP = os.environ.get("REPLICA_CLIENT_TEST_LOOP", "asyncio")


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(pytest_plugin):
        config.pluginmanager.register(pytest_plugin, "replica_client")
    if TEST_LOOP not in ("asyncio", "uvloop"):
        raise pytest.UsageError(
            f"REPLICA_CLIENT_TEST_LOOP={TEST_LOOP!r}: expected 'asyncio' or 'uvloop'"
        )


if TEST_LOOP == "uvloop":
    # (defined only then: the hook may not decline, and asyncio's loop is the default)
    import uvloop

    def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item
    ) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
        return {"uvloop": uvloop.new_event_loop}
