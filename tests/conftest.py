"""Shared test configuration.

The MariaDB fixtures (``mariadb_primary``, ``mariadb_primary_factory``) come from
the ``replica_client`` pytest plugin, registered as a ``pytest11`` entry point by
``pip install -e .``. When the package is imported from a source tree without
that install, the plugin is registered here instead.

``REPLICA_CLIENT_TEST_LOOP=uvloop`` runs every async test on uvloop's event
loop instead of asyncio's own (``tests/loops.py``).

The suite needs the compiled accelerator (``replica_client._speedups``), also
for its pure-Python run (``REPLICA_CLIENT_PURE_PYTHON=1``), whose results are
compared with it: without it the run stops before the first test, saying what
to install, rather than failing hundreds of tests one by one.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Mapping

import pytest

from replica_client.testing import pytest_plugin
from tests.loops import TEST_LOOP, loop_factory

__all__: list[str] = []


ACCELERATOR_MISSING = (
    "replica_client._speedups, the C accelerator, is not built ({reason}); the test suite "
    "needs it. It is built by pip install -e '.[test,spark]' when a C compiler and the "
    "Python headers are there: on Debian/Ubuntu, sudo apt-get install gcc python3-dev, then "
    "run that pip install again."
)


def accelerator_missing() -> str | None:
    """Why the compiled accelerator cannot be imported, or None when it can."""
    try:
        importlib.import_module("replica_client._speedups")
    except ImportError as exc:
        return ACCELERATOR_MISSING.format(reason=exc)
    return None


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(pytest_plugin):
        config.pluginmanager.register(pytest_plugin, "replica_client")
    try:
        loop_factory()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    missing = accelerator_missing()
    if missing is not None:
        raise pytest.UsageError(missing)


if TEST_LOOP == "uvloop":
    # (defined only then: the hook may not decline, and asyncio's loop is the default)
    def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item
    ) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
        factory = loop_factory()
        assert factory is not None
        return {"uvloop": factory}
