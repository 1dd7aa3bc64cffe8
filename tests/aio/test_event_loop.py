"""The async tests run on the event loop ``REPLICA_CLIENT_TEST_LOOP`` names."""

from __future__ import annotations

import asyncio

from tests.conftest import TEST_LOOP

__all__: list[str] = []


async def test_the_loop_asked_for() -> None:
    module = type(asyncio.get_running_loop()).__module__
    assert module.split(".")[0] == TEST_LOOP, module
