"""The optional compiled accelerator (``replica_client._speedups``), loaded once.

Value layer, like ``errors.py``: no I/O. The extension is built on install when
a C compiler is there; without it, or with ``REPLICA_CLIENT_PURE_PYTHON=1`` in
the environment, every caller takes its pure-Python path (the results are the
same; the test suite runs both).
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["PURE_PYTHON_ENV", "speedups"]


PURE_PYTHON_ENV = "REPLICA_CLIENT_PURE_PYTHON"


def _load() -> ModuleType | None:
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        from . import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None
    module: ModuleType = _speedups
    return module


_SPEEDUPS = _load()


def speedups() -> ModuleType | None:
    """The compiled accelerator module, or None (not built, or switched off)."""
    return _SPEEDUPS
