"""The accelerator's JSON text of row images equals the Python writer's, byte for byte.

``spark/changelog.py`` writes ``before``/``after`` with Python's ``json`` encoder
(``_json(_image(...))``); ``images_json`` hands the images it can to
``csrc/jsontext.c`` and the others back to that writer. Compared here on
images generated from a seed (every scalar type, every value the ``default``
maps, containers, subclasses, missing columns) and on every rows event of the
real binlogs in ``tests/data/binlogs``.
"""

from __future__ import annotations

import datetime as dt
import enum
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

import replica_client as rc
from replica_client.binlog.events import (
    JSON_NULL,
    MISSING,
    Geometry,
    InvalidDate,
    RowsEvent,
    UpdateRowsEvent,
)
from replica_client.jsonvalues import json_value
from replica_client.spark import changelog
from replica_client.spark.changelog import _image, _json, images_json, pk_texts
from tests.implementations import IMPLEMENTATIONS, PURE_PYTHON_RUN, accelerator
from tests.test_changes import _readable_fixtures

__all__: list[str] = []


class _Text(str):
    pass


class _Level(enum.IntEnum):
    LOW = 1


class _Stamp(dt.datetime):
    pass


_SCALARS: list[Any] = [
    None, True, False, 0, -1, 7, 2**70, -(2**63), 1.5, -0.0, 1e300, 5e-324,
    float("nan"), float("inf"), float("-inf"),
    "", "plain", 'quo"te', "back\\slash", "ctl\x00\x08\x1f\x7f", "ünïcødé", "emoji \U0001f600",
    "\ud800 lone", "\u2028\u2029", "tab\tnew\nline", "caf\xe9 \xa0\xff", "del\x7f",
    "x" * 300, "ends with \\",
]  # fmt: skip
_MAPPED: list[Any] = [
    Decimal("1.10"), Decimal("-0E-5"), Decimal("123456789012345678901234567890.5"),
    dt.datetime(2024, 1, 2, 3, 4, 5, 6), dt.datetime(2024, 1, 2, tzinfo=dt.UTC),
    dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    dt.datetime(2024, 11, 3, 1, 30, 0, 500000, fold=1), dt.date(1999, 12, 31), dt.date(1, 1, 1),
    _Stamp(2024, 5, 6, 7, 8, 9),
    dt.timedelta(hours=-838, minutes=-59), dt.timedelta(microseconds=5),
    b"", b"\x00\xff", bytearray(b"ab"), JSON_NULL,
    # SET values: their sorted labels, written as an array
    frozenset({"a", "b"}), frozenset(), frozenset({"ünï", 'q"t', "a\\b", "\x01", "plain"}),
    frozenset({3, 1, 2}), frozenset({1.5, -2}), frozenset({Decimal("1.50"), Decimal("-3")}),
    frozenset({(1,)}), set(),
    # JSON documents (MySQL's JSON type) and what json_value turns into objects or arrays
    {}, [], [1, "x"], {"k": Decimal("1")}, {"a": [1, {"b": None, "c": JSON_NULL}], "é": 1.5},
    {'q"t': True, "\x01": [[], {}], "d": dt.datetime(2024, 1, 2, 3, 4, 5)}, [[[["deep"]]]],
    (1, 2), InvalidDate(0, 0, 0), Geometry(4326, b"\x01"),
]  # fmt: skip
_LEFT_TO_PYTHON: list[Any] = [
    _Text("sub"), _Level.LOW, {1: "a"}, {"k": _Text("x")}, [1, [_Level.LOW]],
]  # fmt: skip


def _row(rng: random.Random, width: int, odd: float) -> tuple[Any, ...]:
    def value() -> Any:
        r = rng.random()
        if r < odd:
            return rng.choice(_LEFT_TO_PYTHON)
        if r < 0.15:
            return MISSING
        return rng.choice(_MAPPED if r < 0.4 else _SCALARS)

    return tuple(value() for _ in range(width))


def _python(
    names: tuple[str, ...], rows: tuple[Any, ...], side: int, columns: Any = None
) -> list[str]:
    images = [row if side < 0 else row[side] for row in rows]
    if columns is None:
        return [_json(_image(names, image)) for image in images]
    return [
        _json({names[i]: im[i] for i in columns if i < len(im) and im[i] is not MISSING})
        for im in images
    ]


@pytest.mark.parametrize("seed", range(40))
def test_generated_images_are_written_as_the_python_writer_writes_them(seed: int) -> None:
    rng = random.Random(seed)
    width = rng.choice([0, 1, 3, 7, 28, 60])
    names = tuple(rng.choice(["id", 'we"ird', "ä", "c\x01", "k"]) + str(i) for i in range(width))
    odd = rng.choice([0.0, 0.0, 0.02, 0.3])
    rows = tuple(_row(rng, width, odd) for _ in range(rng.randrange(1, 40)))
    pairs = tuple(zip(rows, rows[::-1], strict=True))
    assert images_json(names, rows, -1, False) == _python(names, rows, -1)
    for side in (0, 1):
        assert images_json(names, pairs, side, False) == _python(names, pairs, side)
    # a primary key: some columns, in the key's order (not the table's)
    key = tuple(rng.sample(range(width), min(width, rng.choice([1, 2, 3]))))
    assert images_json(names, rows, -1, False, key) == _python(names, rows, -1, key)
    assert pk_texts(key, names, pairs, 1) == (
        _python(names, pairs, 1, key) if key else [None] * len(pairs)
    )
    # the changelog's columns: the same texts as Arrow strings (the accelerator's
    # json_column, with the Python writer's text where it leaves an image)
    # (a lone surrogate has no UTF-8: such a text cannot go into Arrow at all)
    for side, images in ((-1, rows), (0, pairs), (1, pairs)):
        for columns in (None, key):
            expected: list[str | None] = [*_python(names, images, side, columns)]
            column = changelog._Texts()
            if any("\ud800" in str(text) for text in expected):
                with pytest.raises(UnicodeEncodeError):
                    column.images(names, images, side, False, columns)
                continue
            if columns is None:
                column.images(names, images, side, False)
            else:
                column.keys(columns, names, images, side)
                expected = expected if columns else [None] * len(images)
            assert column.array().to_pylist() == expected
    if PURE_PYTHON_RUN:  # images_json is the Python writer itself
        assert changelog._c_json_images is None
        return
    texts = accelerator().json_images(
        names, rows, -1, MISSING, changelog._FAST_DEFAULT, json_value, changelog._quote, None
    )
    for text, row in zip(texts, rows, strict=True):
        # the accelerator writes every image without a value it must leave to
        # Python; it writes UTF-8, which a str with a lone surrogate has none of
        odd_one = any(v is o for v in row for o in _LEFT_TO_PYTHON) or any(
            isinstance(v, str) and "\ud800" in v for v in row
        )
        assert (text is None) == odd_one


def test_every_rows_event_of_the_real_binlogs_is_written_alike() -> None:
    written = 0
    for path in _readable_fixtures():
        try:
            events = [e for e in rc.open_binlog(path) if isinstance(e, RowsEvent)]
        except rc.ReplicaError:
            continue  # files this decoder refuses: tests/fixtures_walk
        for event in events:
            names = event.table.column_names
            rows: tuple[Any, ...] = getattr(event, "rows", ())
            key = event.table.primary_key
            for side in (0, 1) if isinstance(event, UpdateRowsEvent) else (-1,):
                assert images_json(names, rows, side, False) == _python(names, rows, side), path
                texts = pk_texts(key, names, rows, side)
                assert texts == (_python(names, rows, side, key) if key else [None] * len(rows))
                written += len(rows)
    assert written > 10_000


def test_a_table_naming_a_column_twice_is_written_as_a_dict_of_it() -> None:
    names, rows = ("a", "b", "a"), ((1, 2, 3), (MISSING, 2, 3), (1, 2, MISSING))
    assert images_json(names, rows, -1, False) == _python(names, rows, -1)
    assert images_json(names, rows, -1, False)[0] == '{"a":3,"b":2}'


Writer = Callable[..., list[str | None]]


def _writer(implementation: str, monkeypatch: pytest.MonkeyPatch) -> Writer:
    """One implementation of the image writer, called as
    ``write(names, rows, side, columns=None, *, forms=..., quote=...)``: the
    accelerator's ``json_images`` (the one ``images_json`` takes), or the Python
    writer ``images_json`` uses without it, whose forms are ``_FAST_DEFAULT`` and
    whose quote is json's own (a caller gives it no other)."""
    if implementation == "accelerated":
        c_json_images: Writer = accelerator().json_images
        assert changelog._c_json_images is c_json_images  # what images_json calls

        def accelerated(
            names: tuple[str, ...],
            rows: tuple[Any, ...],
            side: int,
            columns: Any = None,
            *,
            forms: Any = changelog._FAST_DEFAULT,
            quote: Any = changelog._quote,
        ) -> list[str | None]:
            texts: list[str | None] = c_json_images(
                names, rows, side, MISSING, forms, json_value, quote, columns
            )
            return texts

        return accelerated
    monkeypatch.setattr(changelog, "_c_json_images", None)

    def python(
        names: tuple[str, ...],
        rows: tuple[Any, ...],
        side: int,
        columns: Any = None,
        *,
        forms: Any = changelog._FAST_DEFAULT,
        quote: Any = changelog._quote,
    ) -> list[str | None]:
        assert quote is changelog._quote, "the Python writer quotes with json's own function"
        monkeypatch.setattr(changelog, "_FAST_DEFAULT", forms)
        return list(images_json(names, rows, side, False, columns))

    return python


def _quote_a(text: str) -> str:  # escapes "a" too, character by character
    return changelog._quote(text).replace("a", "\\u0061")


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_shortcuts_follow_the_functions_the_caller_gives(
    implementation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain strings and ISO dates are written without calling ``quote`` or the
    form; what they write is still what those functions give."""
    images = _writer(implementation, monkeypatch)

    def write(value: Any, forms: dict[type, Any], quote: Any = changelog._quote) -> str:
        return str(images(("k",), ((value,),), -1, forms=forms, quote=quote)[0])

    assert write("banana", {}) == '{"k":"banana"}'
    day, stamp = dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5)
    assert write(day, {dt.date: dt.date.isoformat}) == '{"k":"2024-01-02"}'
    assert write(stamp, {dt.datetime: dt.datetime.isoformat}) == '{"k":"2024-01-02T03:04:05"}'
    # another form for the same types: that form's text
    assert write(day, {dt.date: lambda d: d.strftime("%d.%m.%Y")}) == '{"k":"02.01.2024"}'
    assert write(stamp, {dt.datetime: lambda d: d.isoformat(" ")}) == '{"k":"2024-01-02 03:04:05"}'
    # the forms of the other type do not apply
    assert write(stamp, {dt.datetime: dt.date.isoformat}) == '{"k":"2024-01-02"}'
    assert write(Decimal("1.5"), {Decimal: lambda d: "a" + str(d)}) == '{"k":"a1.5"}'
    if implementation == "python":
        return  # the Python writer takes no quote: json's own is the only one
    # another quote: plain strings too go through it, and so does a form's text
    assert write("banana", {}, _quote_a) == '{"k":"b\\u0061n\\u0061n\\u0061"}'
    assert write("xyz", {}, _quote_a) == '{"k":"xyz"}'
    assert write(Decimal("1.5"), {Decimal: lambda d: "a" + str(d)}, _quote_a) == (
        '{"k":"\\u00611.5"}'
    )


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_what_is_built_once_per_table_follows_names_columns_and_quote(
    implementation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keys and column indexes are built once per (names, columns, quote) and
    reused: another table of the same width, another key or another quote function
    is written with its own."""
    images = _writer(implementation, monkeypatch)
    accelerated = implementation == "accelerated"

    def write(names: tuple[str, ...], columns: Any, quote: Any = changelog._quote) -> Any:
        return images(names, ((1, "x", 2),), -1, columns, quote=quote)

    for _ in range(2):  # built, then reused
        assert write(("a", "b", "c"), None) == ['{"a":1,"b":"x","c":2}']
        assert write(("a", "b", "d"), None) == ['{"a":1,"b":"x","d":2}']
        assert write(("a", "b", "c"), (2, 0)) == ['{"c":2,"a":1}']
        assert write(("a", "b", "c"), (0,)) == ['{"a":1}']
        if accelerated:
            assert write(("a", "b", "c"), (0,), _quote_a) == ['{"\\u0061":1}']
        # a name twice: a dict of it; the accelerator leaves that image to the caller
        assert write(("a", "b", "a"), None) == [None if accelerated else '{"a":2,"b":"x"}']
    for i in range(600):  # more tables than are kept: still each its own
        assert write((f"t{i}", "b", "c"), (0,)) == [f'{{"t{i}":1}}']


#: What is not a row (or not a writer's argument), and what each implementation
#: raises for it: the accelerator checks the types itself, the Python writer fails
#: where Python does. Where the Python writer has no such argument (forms that are
#: not a dict) or reads any sequence as a row (a list), the case is the
#: accelerator's only.
_NOT_ROWS: list[tuple[str, dict[str, Any], dict[str, tuple[type[Exception], str]]]] = [
    (
        "a row that is a list",
        {"names": ("a",), "rows": ([1],), "side": -1},
        {"accelerated": (TypeError, "must be a tuple")},
    ),
    (
        "a row that is not a (before, after) pair",
        {"names": ("a",), "rows": ((1,),), "side": 0},
        {
            "accelerated": (TypeError, r"\(before, after\) pair"),
            "python": (TypeError, "not iterable"),
        },
    ),
    (
        "a side that is not -1, 0 or 1",
        {"names": ("a",), "rows": ((1,),), "side": 2},
        {"accelerated": (ValueError, "side"), "python": (IndexError, "out of range")},
    ),
    (
        "a column index out of the names",
        {"names": ("a",), "rows": ((1, 2),), "side": -1, "columns": (1,)},
        {"accelerated": (IndexError, "column index"), "python": (IndexError, "out of range")},
    ),
    (
        "an error of a form",  # goes through
        {
            "names": ("a",),
            "rows": ((Decimal(1),),),
            "side": -1,
            "forms": {Decimal: lambda v: 1 / 0},
        },
        {
            "accelerated": (ZeroDivisionError, "division by zero"),
            "python": (ZeroDivisionError, "division by zero"),
        },
    ),
    (
        "forms that are not a dict",
        {"names": ("a",), "rows": ((1,),), "side": -1, "forms": []},
        {"accelerated": (TypeError, "forms: dict")},
    ),
]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_accelerated_writer_refuses_what_is_not_a_row(
    implementation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = _writer(implementation, monkeypatch)
    refused = 0
    for _what, arguments, errors in _NOT_ROWS:
        if implementation not in errors:
            continue
        error, message = errors[implementation]
        with pytest.raises(error, match=message):
            images(**arguments)
        refused += 1
    assert refused == (6 if implementation == "accelerated" else 4)
