"""Which implementations a test run holds to a contract: pure Python, and the accelerator.

The compiled accelerator (``replica_client._speedups``, ``replica_client/accel.py``)
is built on install in this project's CI, so a run without it is a broken build,
not a pure-Python run -- unless ``REPLICA_CLIENT_PURE_PYTHON=1`` (the suite's
deliberate pure-Python run) switches it off. Tests of code with both paths
parametrize over :data:`IMPLEMENTATIONS`; the ``"accelerated"`` case takes the
accelerator through :func:`accelerator`, which fails (never skips, never
returns early) when it is missing.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Final

from replica_client.accel import PURE_PYTHON_ENV, speedups

__all__ = ["IMPLEMENTATIONS", "PURE_PYTHON_RUN", "accelerator"]

#: The suite's deliberate pure-Python run (the accelerator is switched off).
PURE_PYTHON_RUN: Final = os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")

#: The implementations this run has: the pure-Python one always, the accelerated
#: one unless the run is the pure-Python one.
IMPLEMENTATIONS: Final = ("python",) if PURE_PYTHON_RUN else ("python", "accelerated")


def accelerator() -> ModuleType:
    """The accelerator module; an assertion error when it is not there."""
    assert not PURE_PYTHON_RUN, f"{PURE_PYTHON_ENV} is set: this run has no accelerator"
    module = speedups()
    assert module is not None, (
        "replica_client._speedups is not built: the accelerator is built on install "
        "(a C compiler and the Python headers); set "
        f"{PURE_PYTHON_ENV}=1 for the deliberate pure-Python run"
    )
    return module
