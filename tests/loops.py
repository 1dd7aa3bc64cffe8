"""The event loop the tests run on: asyncio's own, or uvloop's.

``REPLICA_CLIENT_TEST_LOOP=uvloop`` puts every async test on uvloop's loop
(the pytest-asyncio hook in ``tests/conftest.py``) and every :func:`run` of
a synchronous test too; ``scripts/test.sh`` runs the streaming suites so, a
second time.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["TEST_LOOP", "loop_factory", "run"]

_T = TypeVar("_T")

#: "asyncio" (the default) or "uvloop".
TEST_LOOP = os.environ.get("REPLICA_CLIENT_TEST_LOOP", "asyncio")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's ``new_event_loop`` when the tests run on it; None: asyncio's default."""
    if TEST_LOOP == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    if TEST_LOOP != "asyncio":
        raise ValueError(f"REPLICA_CLIENT_TEST_LOOP={TEST_LOOP!r}: expected 'asyncio' or 'uvloop'")
    return None


def run(coro: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run(coro)`` on the loop the tests run on."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coro)
