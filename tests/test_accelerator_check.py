"""The suite's start-up check: without the compiled accelerator, one message says what to
install (``tests/conftest.py``)."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from tests import conftest

__all__: list[str] = []


def test_a_built_accelerator_passes_the_check() -> None:
    assert conftest.accelerator_missing() is None


def test_a_missing_accelerator_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def without_speedups(name: str, package: str | None = None) -> ModuleType:
        if name == "replica_client._speedups":
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", without_speedups)
    message = conftest.accelerator_missing()
    assert message is not None
    assert "No module named 'replica_client._speedups'" in message
    assert "apt-get install gcc python3-dev" in message
    assert "pip install -e '.[test,spark]'" in message
