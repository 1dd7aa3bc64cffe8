"""The import rules of the layers, checked on the source with ``ast``.

- ``wire/``, ``binlog/`` and ``session.py`` (with ``delivery.py`` and
  ``receipt.py``) are sans-I/O, and so are the rules the drivers share above
  them (:data:`SANS_IO`: changes, checkpoints, schema history, the snapshot's
  rules, the control layer's questions): they import no event loop, socket,
  TLS, thread, mmap, selector, subprocess or Spark module;
- ``wire/`` and ``binlog/`` do not import each other, nor the layers above
  them (``session``, ``aio``, ``files``, ``spark``, ``cli``, ``testing``);
  what both need (the byte codec, errors, positions, options) lives below
  them, and those value modules import neither;
- among the library modules, only ``aio/`` imports asyncio and only ``spark/``
  imports pyspark (``cli.py`` and the ``testing`` harness are entry points at
  the edge and may drive an event loop);
- ``spark/`` opens no connection itself (no ``socket`` or ``ssl``): it runs the
  replica's session through ``blocking.py``;
- no import cycle among the package's modules, imports inside functions and
  ``TYPE_CHECKING`` blocks included (a module's import of its own parent
  package is not an edge: the parent is initialised first anyway);
- no module imports another module's ``_private`` name: a name two modules
  share is public.

Every ``.py`` file is parsed, imports inside functions and ``TYPE_CHECKING``
blocks included; ``importlib.import_module("x")`` / ``__import__("x")`` with a
literal name count as imports too. The checker itself is tested on synthetic
sources so that a violation is known to be caught.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "replica_client"
PACKAGE = "replica_client"

#: Modules the sans-I/O layers must never import (top-level names).
IO_MODULES = frozenset(
    {"asyncio", "socket", "ssl", "threading", "mmap", "selectors", "subprocess", "pyspark"}
)
_ABOVE_BOTH = ("session", "aio", "files", "spark", "cli", "testing")
#: Layers that ``binlog/`` must not import: ``wire/`` beside it and those above.
ABOVE_BINLOG = tuple(f"{PACKAGE}.{name}" for name in ("wire", *_ABOVE_BOTH))
#: Layers that ``wire/`` must not import: ``binlog/`` beside it and those above.
ABOVE_WIRE = tuple(f"{PACKAGE}.{name}" for name in ("binlog", *_ABOVE_BOTH))
#: The modules below both, which ``wire/`` and ``binlog/`` share.
BELOW_BOTH = tuple(
    f"{PACKAGE}.{name}" for name in ("codec", "errors", "position", "config", "accel")
)
#: The modules that do no I/O: the core (wire/, binlog/, the session and its delivery
#: and receipt checks) and the rules above it that both drivers share (row changes,
#: checkpoints, schema history, the snapshot's rules, the control layer's questions).
SANS_IO = tuple(
    f"{PACKAGE}.{name}"
    for name in (
        "wire",
        "binlog",
        "session",
        "delivery",
        "receipt",
        "changes",
        "checkpoint",
        "schema",
        "snapshot",
        "control.procedure",
        "control.primary",
        "control.queries",
        "codec",
        "errors",
        "position",
        "config",
        "jsonvalues",
    )
)
#: Library modules exempt from the "only aio/ imports asyncio" rule.
EDGE_MODULES = (f"{PACKAGE}.cli", f"{PACKAGE}.demo", f"{PACKAGE}.__main__", f"{PACKAGE}.testing")


@dataclass(frozen=True)
class Import:
    """One imported module name found in a source file."""

    module: str
    line: int


@dataclass(frozen=True)
class Violation:
    module: str
    imported: str
    line: int
    rule: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported} ({self.rule})"


def module_name(path: Path, root: Path = PACKAGE_DIR) -> str:
    """``replica_client/binlog/decoder.py`` -> ``replica_client.binlog.decoder``."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def imports_of(source: str, module: str, *, is_package: bool = False) -> Iterator[Import]:
    """Every module ``source`` imports, relative imports resolved against ``module``.

    ``from x import y`` yields both ``x`` and ``x.y`` (``y`` may be a submodule).
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            yield Import(base, node.lineno)
            for alias in node.names:
                if alias.name != "*":
                    yield Import(f"{base}.{alias.name}", node.lineno)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            first = node.args[0]
            if (
                name in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                yield Import(first.value, node.lineno)


def _under(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def check_source(source: str, module: str, *, is_package: bool = False) -> list[Violation]:
    """The layering violations of one module's source."""
    out: list[Violation] = []
    sans_io = _under(module, SANS_IO)
    in_binlog = _under(module, (f"{PACKAGE}.binlog",))
    in_wire = _under(module, (f"{PACKAGE}.wire",))
    below = _under(module, BELOW_BOTH)
    edge = _under(module, EDGE_MODULES)
    for imp in imports_of(source, module, is_package=is_package):
        top = imp.module.split(".")[0]
        if sans_io and top in IO_MODULES:
            out.append(Violation(module, imp.module, imp.line, "sans-I/O layer imports I/O"))
        if in_binlog and _under(imp.module, ABOVE_BINLOG):
            out.append(Violation(module, imp.module, imp.line, "binlog/ imports wire/ or above"))
        if in_wire and _under(imp.module, ABOVE_WIRE):
            out.append(Violation(module, imp.module, imp.line, "wire/ imports binlog/ or above"))
        if below and _under(imp.module, (f"{PACKAGE}.binlog", *ABOVE_BINLOG)):
            out.append(Violation(module, imp.module, imp.line, "a shared module imports a layer"))
        if top == "asyncio" and not edge and not _under(module, (f"{PACKAGE}.aio",)):
            out.append(Violation(module, imp.module, imp.line, "asyncio outside aio/"))
        if top == "pyspark" and not _under(module, (f"{PACKAGE}.spark",)):
            out.append(Violation(module, imp.module, imp.line, "pyspark outside spark/"))
        if top in ("socket", "ssl") and _under(module, (f"{PACKAGE}.spark",)):
            out.append(Violation(module, imp.module, imp.line, "spark/ opens connections"))
    return out


def package_files() -> list[Path]:
    return sorted(PACKAGE_DIR.rglob("*.py"))


def check_package() -> list[Violation]:
    out: list[Violation] = []
    for path in package_files():
        out.extend(
            check_source(
                path.read_text(encoding="utf-8"),
                module_name(path),
                is_package=path.name == "__init__.py",
            )
        )
    return out


def _graph_sources() -> dict[str, tuple[str, bool]]:
    return {
        module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
        for p in package_files()
    }


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the modules of ``sources`` it imports (a ``from x import y`` names
    ``x.y`` when that is a module, else ``x``); not its own ancestors."""
    graph: dict[str, set[str]] = {}
    for module, (source, is_package) in sources.items():
        edges = set()
        for imp in imports_of(source, module, is_package=is_package):
            target = imp.module
            while target and target not in sources:
                target = target.rpartition(".")[0]
            if target and target != module and not module.startswith(target + "."):
                edges.add(target)
        graph[module] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (each a cycle or more)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def private_imports(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``from <another module of the package> import _name``, as ``module:line name``."""
    out = []
    for module, (source, is_package) in sources.items():
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _resolve(module, is_package, node.level, node.module)
            if base == module or not _under(base, (PACKAGE,)):
                continue
            for alias in node.names:
                name = alias.name
                if name.startswith("_") and not name.startswith("__"):
                    out.append(f"{module}:{node.lineno} imports {base}.{name}")
    return out


# -- the package ----------------------------------------------------------------------


def test_package_follows_the_layering_rules() -> None:
    violations = check_package()
    assert violations == [], "\n".join(str(v) for v in violations)


def test_every_layer_file_is_walked() -> None:
    names = {module_name(p) for p in package_files()}
    # The checker sees the sans-I/O layers it is meant to guard.
    for required in (
        f"{PACKAGE}.binlog.decoder",
        f"{PACKAGE}.binlog.events",
        f"{PACKAGE}.wire",
        f"{PACKAGE}.wire.registration",
        f"{PACKAGE}.codec",
        f"{PACKAGE}.files",
    ):
        assert required in names
    binlog_files = [p for p in package_files() if p.parent.name == "binlog"]
    assert len(binlog_files) >= 10


def test_wire_and_binlog_share_the_codec_below_them() -> None:
    importers = set()
    for path in package_files():
        module = module_name(path)
        found = imports_of(
            path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py"
        )
        if any(i.module == f"{PACKAGE}.codec" for i in found):
            importers.add(module)
    # One codec for both layers: each of them reads its bytes with it.
    assert any(_under(m, (f"{PACKAGE}.wire",)) for m in importers), sorted(importers)
    assert any(_under(m, (f"{PACKAGE}.binlog",)) for m in importers), sorted(importers)


def test_asyncio_importers_are_all_in_aio() -> None:
    importers = set()
    for path in package_files():
        module = module_name(path)
        found = imports_of(
            path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py"
        )
        if any(i.module.split(".")[0] == "asyncio" for i in found):
            importers.add(module)
    library = {m for m in importers if not _under(m, EDGE_MODULES)}
    # aio/ is where the event loop lives: the rule is not vacuous.
    assert library, "no module of aio/ imports asyncio"
    assert all(_under(m, (f"{PACKAGE}.aio",)) for m in library), sorted(library)


def test_no_import_cycles() -> None:
    sources = _graph_sources()
    graph = import_graph(sources)
    # the graph is the package's: the rule is not vacuous
    assert len(graph) > 50 and sum(len(e) for e in graph.values()) > 100
    assert import_cycles(graph) == []


def test_no_module_imports_another_modules_private_name() -> None:
    assert private_imports(_graph_sources()) == []


# -- the checker catches what it should -----------------------------------------------

BAD_SOURCES = [
    ("replica_client.binlog.decoder", "import asyncio\n", "asyncio"),
    ("replica_client.binlog.decoder", "import socket as s\n", "socket"),
    ("replica_client.binlog.row_decoders", "from ssl import SSLContext\n", "ssl"),
    ("replica_client.wire.framing", "from threading import Lock\n", "threading"),
    ("replica_client.wire.framing", "def f():\n    import mmap\n", "mmap"),
    ("replica_client.session", "import selectors\n", "selectors"),
    ("replica_client.delivery", "import asyncio\n", "asyncio"),
    ("replica_client.control.primary", "import socket\n", "socket"),
    ("replica_client.schema.history", "def f():\n    import threading\n", "threading"),
    ("replica_client.session", "from subprocess import run\n", "subprocess"),
    ("replica_client.binlog.columns", "import pyspark.sql\n", "pyspark.sql"),
    (
        "replica_client.binlog.decoder",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import asyncio\n",
        "asyncio",
    ),
    (
        "replica_client.binlog.decoder",
        "import importlib\nimportlib.import_module('socket')\n",
        "socket",
    ),
    ("replica_client.binlog.decoder", "from ..wire import packets\n", "replica_client.wire"),
    (
        "replica_client.binlog.table_bindings",
        "from ..wire.constants import X\n",
        "replica_client.wire",
    ),
    ("replica_client.binlog", "from replica_client.wire import framing\n", "replica_client.wire"),
    (
        "replica_client.wire.registration",
        "from ..binlog.constants import BinlogChecksumAlg\n",
        "replica_client.binlog",
    ),
    (
        "replica_client.wire.packets",
        "import replica_client.binlog.events\n",
        "replica_client.binlog",
    ),
    ("replica_client.wire.auth", "from ..binlog import constants\n", "replica_client.binlog"),
    ("replica_client.wire", "from replica_client import binlog\n", "replica_client.binlog"),
    (
        "replica_client.wire.framing",
        "def f():\n    from ..binlog.decoder import EventDecoder\n",
        "replica_client.binlog",
    ),
    (
        "replica_client.wire.packets",
        "import importlib\nimportlib.import_module('replica_client.binlog.codec')\n",
        "replica_client.binlog",
    ),
    ("replica_client.wire.registration", "from ..session import S\n", "replica_client.session"),
    ("replica_client.codec", "from .binlog.constants import EventType\n", "replica_client.binlog"),
    ("replica_client.codec", "from .wire import packets\n", "replica_client.wire"),
    ("replica_client.errors", "from .wire.constants import Command\n", "replica_client.wire"),
    ("replica_client.binlog.decoder", "from .. import session\n", "replica_client.session"),
    (
        "replica_client.binlog.row_decoders",
        "from replica_client.aio import stream\n",
        "replica_client.aio",
    ),
    ("replica_client.binlog.row_decoders", "import replica_client.files\n", "replica_client.files"),
    ("replica_client.binlog.row_decoders", "from ..spark import source\n", "replica_client.spark"),
    (
        "replica_client.binlog.row_decoders",
        "from replica_client import cli\n",
        "replica_client.cli",
    ),
    (
        "replica_client.binlog.row_decoders",
        "from ..testing.server import MariaDBServer\n",
        "replica_client.testing",
    ),
    ("replica_client.files", "import asyncio\n", "asyncio"),
    ("replica_client.changes", "from asyncio import Queue\n", "asyncio"),
    ("replica_client.aio.stream", "import pyspark\n", "pyspark"),
    ("replica_client.spark.dump", "import socket\n", "socket"),
    ("replica_client.spark.planner", "from ssl import SSLContext\n", "ssl"),
]


@pytest.mark.parametrize(("module", "source", "culprit"), BAD_SOURCES)
def test_checker_flags_forbidden_import(module: str, source: str, culprit: str) -> None:
    violations = check_source(source, module)
    assert violations, f"{source!r} in {module} was not flagged"
    assert any(v.imported.startswith(culprit) for v in violations), violations


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("replica_client.binlog.decoder", "import struct, zlib\nfrom ..errors import X\n"),
        ("replica_client.binlog.decoder", "from ..codec import u8\nfrom . import rows\n"),
        ("replica_client.aio.stream", "import asyncio\nimport ssl\nfrom ..session import S\n"),
        ("replica_client.files", "import mmap\nfrom .binlog.decoder import EventDecoder\n"),
        ("replica_client.testing.server", "import socket\nimport subprocess\nimport threading\n"),
        ("replica_client.cli", "import asyncio\n"),
        ("replica_client.spark.source", "import pyspark.sql\n"),
        ("replica_client.blocking", "import socket\nimport ssl\n"),
        ("replica_client.wire.auth", "import hashlib\nfrom ..errors import ProtocolError\n"),
        ("replica_client.wire.packets", "from ..codec import read_lenenc_int, server_text\n"),
        ("replica_client.binlog.query_events", "from ..codec import u8\nfrom .format import F\n"),
        ("replica_client.codec", "import struct\nfrom .errors import MalformedEventError\n"),
        ("replica_client.session", "from .binlog import decoder\nfrom .wire import packets\n"),
    ],
)
def test_checker_allows_legal_imports(module: str, source: str) -> None:
    assert check_source(source, module) == []


def test_relative_imports_resolve_against_the_package() -> None:
    found = {
        i.module for i in imports_of("from ..wire import x\n", "replica_client.binlog.row_decoders")
    }
    assert found == {"replica_client.wire", "replica_client.wire.x"}
    found = {
        i.module
        for i in imports_of(
            "from .row_decoders import y\n", "replica_client.binlog", is_package=True
        )
    }
    assert found == {"replica_client.binlog.row_decoders", "replica_client.binlog.row_decoders.y"}
    assert module_name(PACKAGE_DIR / "binlog" / "__init__.py") == "replica_client.binlog"


def _sources(**modules: str) -> dict[str, tuple[str, bool]]:
    return {f"{PACKAGE}.{name.replace('__', '.')}": (src, False) for name, src in modules.items()}


def test_cycle_checker_finds_lazy_and_type_checking_cycles() -> None:
    lazy = _sources(
        aio__a="from .b import B\n",
        aio__b="def f():\n    from .a import A\n",
        aio__c="from .a import A\n",
    )
    assert import_cycles(import_graph(lazy)) == [[f"{PACKAGE}.aio.a", f"{PACKAGE}.aio.b"]]
    typed = _sources(
        x="from .y import Y\n",
        y="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .z import Z\n",
        z="from . import x\n",
    )
    assert import_cycles(import_graph(typed)) == [[f"{PACKAGE}.x", f"{PACKAGE}.y", f"{PACKAGE}.z"]]
    # a chain is no cycle, and a module's import of its own package is no edge
    chain = _sources(schema="from .schema__history import H\n", schema__history="from . import d\n")
    assert import_cycles(import_graph(chain)) == []


def test_private_import_checker() -> None:
    found = private_imports(
        _sources(
            a="from .b import _helper, public\nfrom . import __version__\n",
            b="from ._speedups import x\nfrom .c import _X as Y\n",
            c="from collections import _OrderedDictKeysView\n",
        )
    )
    assert found == [
        f"{PACKAGE}.a:1 imports {PACKAGE}.b._helper",
        f"{PACKAGE}.b:2 imports {PACKAGE}.c._X",
    ]
