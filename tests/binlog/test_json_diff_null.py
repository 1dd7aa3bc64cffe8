"""JSON null in partial-update diffs (``binlog/json_binary.py``), on hand-made bytes.

A whole JSON document that is ``null`` decodes as ``JSON_NULL`` (so that it is
not SQL NULL); inside a document JSON null is ``None``, as ``json.loads`` gives.
A diff's value always lands inside a document, so a diff whose value is the
literal ``null`` must put ``None`` there, and a later before image of the same
document (decoded as a whole) must agree with the after image the diff made.
"""

from __future__ import annotations

import json

from replica_client.binlog.json_binary import (
    JSON_NULL,
    JsonDiff,
    JsonDiffOperation,
    apply_json_diffs,
    decode_json_binary,
    decode_json_diff,
)

__all__: list[str] = []

# Binary JSON (MySQL json_binary.cc): type byte, then the value.
NULL_DOC = b"\x04\x00"  # LITERAL null
# {"a": 1} as a small object: count=1, size=12, key entry (offset 11, length 1),
# value entry (INT16 inlined: 1), key "a".
OBJECT_A_1 = b"\x00" + b"\x01\x00" + b"\x0c\x00" + b"\x0b\x00\x01\x00" + b"\x05\x01\x00" + b"a"
# {"a": null}: the same with the value entry LITERAL null inlined.
OBJECT_A_NULL = b"\x00" + b"\x01\x00" + b"\x0c\x00" + b"\x0b\x00\x01\x00" + b"\x04\x00\x00" + b"a"
# [null] as a small array: count=1, size=7, value entry LITERAL null inlined.
ARRAY_NULL = b"\x02" + b"\x01\x00" + b"\x07\x00" + b"\x04\x00\x00"

# Diff vectors (Json_diff::write_binary): operation, packed path length, path,
# packed value length, binary JSON value.
REPLACE_A_WITH_NULL = b"\x00" + b"\x03$.a" + b"\x02" + NULL_DOC
INSERT_B_NULL = b"\x01" + b"\x03$.b" + b"\x02" + NULL_DOC
INSERT_C_ARRAY_NULL = b"\x01" + b"\x03$.c" + bytes([len(ARRAY_NULL)]) + ARRAY_NULL
REPLACE_A_WITH_EMPTY = b"\x00" + b"\x03$.a" + b"\x00"  # the server reads empty as null


def test_a_whole_document_that_is_null_stays_json_null() -> None:
    assert decode_json_binary(NULL_DOC) is JSON_NULL
    assert decode_json_binary(b"") is JSON_NULL


def test_null_inside_a_document_is_none() -> None:
    assert decode_json_binary(OBJECT_A_1) == {"a": 1}
    assert decode_json_binary(OBJECT_A_NULL) == {"a": None} == json.loads('{"a": null}')
    assert decode_json_binary(ARRAY_NULL) == [None]


def test_a_diff_whose_value_is_null_decodes_as_none() -> None:
    (replace,) = decode_json_diff(REPLACE_A_WITH_NULL)
    assert replace == JsonDiff(JsonDiffOperation.REPLACE, "$.a", None)
    assert replace.value is None
    (insert,) = decode_json_diff(INSERT_B_NULL)
    assert insert.value is None
    (empty,) = decode_json_diff(REPLACE_A_WITH_EMPTY)
    assert empty.value is None


def test_a_null_diff_applied_to_a_document_puts_none_inside_it() -> None:
    before = decode_json_binary(OBJECT_A_1)
    diffs = decode_json_diff(REPLACE_A_WITH_NULL + INSERT_B_NULL + INSERT_C_ARRAY_NULL)
    after = apply_json_diffs(before, diffs)
    assert after == {"a": None, "b": None, "c": [None]}
    assert after["a"] is None and after["b"] is None
    assert JSON_NULL not in after.values()
    # what json.loads makes of the server's text of the same document
    assert after == json.loads('{"a": null, "b": null, "c": [null]}')
    # and what the next event's before image (the whole document) decodes to
    assert apply_json_diffs(before, decode_json_diff(REPLACE_A_WITH_NULL)) == decode_json_binary(
        OBJECT_A_NULL
    )


def test_a_hand_built_diff_carrying_json_null_still_puts_none_inside() -> None:
    after = apply_json_diffs({"a": 1}, [JsonDiff(JsonDiffOperation.REPLACE, "$.a", JSON_NULL)])
    assert after == {"a": None} and after["a"] is None
