"""The suite reads nothing outside the repository: a fresh clone passes on its own.

Every Python file under ``tests/``, ``fuzz/`` and ``benchmarks/`` is parsed and
each path built from ``Path(__file__)`` is followed: ``.parent`` and
``.parents[n]`` steps (and ``..`` string parts) must never climb above the
repository root. String literals naming a directory beside the repository
(``../something``) are refused too. The checker is tried on synthetic sources
so that a violation is known to be caught.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED_DIRS = ("tests", "fuzz", "benchmarks")


def _levels_up(node: ast.expr) -> int | None:
    """How many directories above ``__file__`` an expression climbs, if it starts there."""
    if isinstance(node, ast.Call):
        func = node.func
        # Path(__file__) and Path(__file__).resolve()
        if isinstance(func, ast.Name) and func.id == "Path" and node.args:
            arg = node.args[0]
            return 0 if isinstance(arg, ast.Name) and arg.id == "__file__" else None
        if isinstance(func, ast.Attribute) and func.attr in ("resolve", "absolute"):
            return _levels_up(func.value)
        return None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _levels_up(node.value)
        return None if inner is None else inner + 1
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "parents"
        and isinstance(node.slice, ast.Constant)
    ):
        inner = _levels_up(node.value.value)
        index = node.slice.value
        if inner is None or not isinstance(index, int):
            return None
        return inner + index + 1
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        inner = _levels_up(node.left)
        right = node.right
        if inner is not None and isinstance(right, ast.Constant) and right.value == "..":
            return inner + 1
        return inner if inner is not None and _is_plain_part(right) else None
    return None


def _is_plain_part(node: ast.expr) -> bool:
    return not (isinstance(node, ast.Constant) and node.value == "..")


def escapes(source: str, depth: int) -> list[int]:
    """Lines of ``source`` (a file ``depth`` directories below the root) that leave the repo."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.expr):
            levels = _levels_up(node)
            # A file at depth d: d + 1 steps reach the root's parent.
            if levels is not None and levels > depth + 1:
                lines.append(node.lineno)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("../")
            and len(node.value) > 3
        ):
            lines.append(node.lineno)
    return sorted(set(lines))


def _checked_files() -> list[Path]:
    return sorted(p for d in CHECKED_DIRS for p in (ROOT / d).rglob("*.py"))


def test_no_test_file_reads_outside_the_repository() -> None:
    offenders = []
    for path in _checked_files():
        depth = len(path.relative_to(ROOT).parts) - 1
        for line in escapes(path.read_text(encoding="utf-8"), depth):
            offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == []


def test_the_binlog_fixtures_live_in_the_repository() -> None:
    from tests.binlog_files import FIXTURES

    assert FIXTURES.is_dir()
    assert ROOT in FIXTURES.parents
    assert (FIXTURES / "MANIFEST.md").is_file()


#: A directory beside the repository, as the samples below name it (each sample
#: is source text for the checker, never a path this module opens).
_BESIDE = "sibling"


@pytest.mark.parametrize(
    ("source", "depth"),
    [
        (f'Path(__file__).resolve().parents[2].parent / "{_BESIDE}"', 1),
        ('Path(__file__).parents[3] / "x"', 1),
        (f'Path(__file__).resolve().parents[2] / ".." / "{_BESIDE}"', 1),
        ('Path(__file__).parent.parent.parent / "x"', 1),
        (f'open("../{_BESIDE}/fixtures/binlogs/MANIFEST.md")', 0),
    ],
)
def test_checker_flags_paths_above_the_root(source: str, depth: int) -> None:
    assert escapes(source, depth) == [1]


@pytest.mark.parametrize(
    ("source", "depth"),
    [
        ('Path(__file__).resolve().parents[1] / "data"', 1),
        ('Path(__file__).resolve().parent / "data" / "binlogs"', 0),
        ('Path(__file__).parents[1] / "tests" / "data"', 1),
        ('x = "../"', 0),
    ],
)
def test_checker_allows_paths_inside(source: str, depth: int) -> None:
    assert escapes(source, depth) == []
