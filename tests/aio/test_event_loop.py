"""The tests run on the event loop ``REPLICA_CLIENT_TEST_LOOP`` names."""

from __future__ import annotations

import asyncio

from tests.loops import TEST_LOOP, run

__all__: list[str] = []


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__.split(".")[0]


async def test_an_async_test_runs_on_the_loop_asked_for() -> None:
    assert await _loop_module() == TEST_LOOP


def test_run_uses_the_loop_asked_for() -> None:
    assert run(_loop_module()) == TEST_LOOP
