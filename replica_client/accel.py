"""The optional compiled accelerator (``replica_client._speedups``), loaded once.

Value layer, like ``errors.py``: no I/O. The extension is built on install
(``setup.py``: without a C compiler or ``Python.h`` the install stops and says
what to install, unless ``REPLICA_CLIENT_PURE_PYTHON=1`` asks for a
pure-Python install). Where it is not built, or with
``REPLICA_CLIENT_PURE_PYTHON=1`` in the environment, every caller takes its
pure-Python path (the results are the same; the test suite runs both).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

__all__ = ["PURE_PYTHON_ENV", "constructor", "speedups"]

_T = TypeVar("_T")

PURE_PYTHON_ENV = "REPLICA_CLIENT_PURE_PYTHON"


def _load() -> ModuleType | None:
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        # by name: the compiled module has no stubs for the type checker to read
        return importlib.import_module(f"{__package__}._speedups")
    except ImportError:
        return None


_SPEEDUPS = _load()


def speedups() -> ModuleType | None:
    """The compiled accelerator module, or None (not built, or switched off)."""
    return _SPEEDUPS


def _slots(cls: type) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__[:-1]:  # object has none
        slots = klass.__dict__.get("__slots__")
        if slots is None:
            return {"__dict__"}  # a class without __slots__ gives instances a __dict__
        names.update((slots,) if isinstance(slots, str) else slots)
    return names


def constructor(cls: type[_T]) -> Callable[..., _T]:
    """A faster ``cls(...)`` for a frozen, slotted dataclass called with every field.

    With the accelerator, a call that passes every field positionally fills
    the slots directly (what the generated ``__init__`` does, one
    ``object.__setattr__`` per field, without the calls); any other call goes
    to ``cls``. An instance holding nothing that could lead back to it (ints,
    strings, bytes, None, other such frozen instances) is left to reference
    counting, as CPython does for such tuples: the cyclic collector skips it.
    Without the accelerator, or for a class whose ``__init__`` does more than
    store its fields or that is not frozen (``__post_init__``, a hand-written
    ``__init__``, keyword-only fields, ``InitVar``, slots that are not fields),
    this is ``cls`` itself.
    """
    sp = _SPEEDUPS
    if sp is None or not dataclasses.is_dataclass(cls):
        return cls
    names = tuple(f.name for f in dataclasses.fields(cls))
    params = getattr(cls, "__dataclass_params__", None)
    if (
        params is None
        or not params.frozen  # a mutable instance could come to hold itself
        or hasattr(cls, "__post_init__")
        or _slots(cls) != set(names)
        or _init_params(cls) != names
    ):
        return cls
    make: Callable[..., Any] = sp.Maker(cls, names)
    return make


def _init_params(cls: type) -> tuple[str, ...] | None:
    # The generated __init__ takes exactly the fields, positionally, in order
    # (not so with a hand-written __init__, keyword-only fields or InitVars).
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if init is None or code is None or code.co_filename != "<string>":
        return None  # not the __init__ dataclass generated
    params = list(inspect.signature(init).parameters.values())[1:]
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
        return None
    return tuple(p.name for p in params)
