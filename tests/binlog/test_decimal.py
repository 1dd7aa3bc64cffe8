"""Tests for the packed DECIMAL codec (replica_client.binlog.decimal).

The table-driven cases are real bytes: a private MariaDB 10.11 server
(``--binlog-format=ROW``, checksum CRC32, compression off) executed the INSERTs of
one ``DECIMAL(p,s) NOT NULL`` column per table; the value bytes were cut out of the
WRITE_ROWS_V1 events (post-header 8 bytes, width, column bitmap, then per row a
1-byte null bitmap followed by the packed decimal) and the expected text is what
``SELECT CAST(d AS CHAR)`` returned for the same rows on that server.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replica_client.binlog.decimal import DIG2BYTES, decimal_size, decode_decimal
from replica_client.errors import MalformedEventError

# (precision, scale, packed bytes as hex, SELECT output)
SERVER_CASES: list[tuple[int, int, str, str]] = [
    (
        65,
        30,
        "800000000000000000000000000000000000000000000000000000000000",
        "0.000000000000000000000000000000",
    ),
    (
        65,
        30,
        "800000000000000000000000000000010000000000000000000000000000",
        "1.000000000000000000000000000000",
    ),
    (
        65,
        30,
        "7ffffffffffffffffffffffffffffffeffffffffffffffffffffffffffff",
        "-1.000000000000000000000000000000",
    ),
    (
        65,
        30,
        "800000000000000000000000000000001dcd650000000000000000000000",
        "0.500000000000000000000000000000",
    ),
    (
        65,
        30,
        "7fffffffffffffffffffffffffffffffe2329affffffffffffffffffffff",
        "-0.500000000000000000000000000000",
    ),
    (
        65,
        30,
        "800000000000000000000000000000000000000000000000000000000001",
        "0.000000000000000000000000000001",
    ),
    (
        65,
        30,
        "7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe",
        "-0.000000000000000000000000000001",
    ),
    (
        65,
        30,
        "85f5e0ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff03e7",
        "99999999999999999999999999999999999.999999999999999999999999999999",
    ),
    (
        65,
        30,
        "7a0a1f00c4653600c4653600c4653600c4653600c4653600c4653600fc18",
        "-99999999999999999999999999999999999.999999999999999999999999999999",
    ),
    (
        65,
        30,
        "800000000000000000000000075bcd15075bcd1500000000000000000000",
        "123456789.123456789000000000000000000000",
    ),
    (
        65,
        30,
        "7ffffffffffffffffffffffff8a432eac521974effffffffffffffffffff",
        "-123456789.987654321000000000000000000000",
    ),
    (
        65,
        30,
        "800000000000000000000001000000000000000000000000000000000000",
        "1000000000.000000000000000000000000000000",
    ),
    (
        65,
        30,
        "7fffffffffffffffffffffffc4653600c4653600ffffffffffffffffffff",
        "-999999999.999999999000000000000000000000",
    ),
    (65, 0, "8000000000000000000000000000000000000000000000000000000000", "0"),
    (65, 0, "8000000000000000000000000000000000000000000000000000000001", "1"),
    (65, 0, "7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffe", "-1"),
    (
        65,
        0,
        "e33b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff",
        "99999999999999999999999999999999999999999999999999999999999999999",
    ),
    (
        65,
        0,
        "1cc4653600c4653600c4653600c4653600c4653600c4653600c4653600",
        "-99999999999999999999999999999999999999999999999999999999999999999",
    ),
    (
        65,
        0,
        "8c149aa4350dfb38d2075bcd1500bc614e35b7bf87350e34c02f075f79",
        "12345678901234567890123456789012345678901234567890123456789012345",
    ),
    (65, 0, "7ffffffffffffffffffffffffffffffffffffffffffffffffffa0a1eff", "-100000000"),
    (65, 0, "8000000000000000000000000000000000000000000000000005f5e100", "100000000"),
    (65, 0, "800000000000000000000000000000000000000000000000003b9ac9ff", "999999999"),
    (65, 0, "7ffffffffffffffffffffffffffffffffffffffffffffffffeffffffff", "-1000000000"),
    (30, 30, "8000000000000000000000000000", "0.000000000000000000000000000000"),
    (30, 30, "85f5e10000000000000000000000", "0.100000000000000000000000000000"),
    (30, 30, "7a0a1effffffffffffffffffffff", "-0.100000000000000000000000000000"),
    (30, 30, "bb9ac9ff3b9ac9ff3b9ac9ff03e7", "0.999999999999999999999999999999"),
    (30, 30, "44653600c4653600c4653600fc18", "-0.999999999999999999999999999999"),
    (30, 30, "7ffffffeffffffffffffffffffff", "-0.000000001000000000000000000000"),
    (30, 30, "875bcd1500bc614e35b7bf87037a", "0.123456789012345678901234567890"),
    (10, 2, "8000000000", "0.00"),
    (10, 2, "7ffffffffe", "-0.01"),
    (10, 2, "8000000001", "0.01"),
    (10, 2, "80bc614e63", "12345678.99"),
    (10, 2, "7f439eb19c", "-12345678.99"),
    (10, 2, "7fffffff9c", "-0.99"),
    (10, 2, "8000000500", "5.00"),
    (10, 2, "7ffffffaff", "-5.00"),
    (5, 4, "800000", "0.0000"),
    (5, 4, "89270f", "9.9999"),
    (5, 4, "76d8f0", "-9.9999"),
    (5, 4, "7ffffe", "-0.0001"),
    (5, 4, "810929", "1.2345"),
    (38, 38, "875bcd1500bc614e35b7bf87350e34c04e", "0.12345678901234567890123456789012345678"),
    (38, 38, "7ffffffffffffffffffffffffffffffffe", "-0.00000000000000000000000000000000000001"),
    (19, 9, "810dfb38d2075bcd15", "1234567890.123456789"),
    (19, 9, "7ef204c72df8a432ea", "-1234567890.123456789"),
    (19, 9, "800000000000000001", "0.000000001"),
    (19, 9, "76c4653600c4653600", "-9999999999.999999999"),
]


@pytest.mark.parametrize(("precision", "scale", "hexbytes", "expected"), SERVER_CASES)
def test_server_written_values(precision: int, scale: int, hexbytes: str, expected: str) -> None:
    raw = bytes.fromhex(hexbytes)
    assert decimal_size(precision, scale) == len(raw)
    value, end = decode_decimal(raw, 0, precision, scale)
    assert end == len(raw)
    assert format(value, "f") == expected
    assert value == Decimal(expected)


def test_cursor_is_respected() -> None:
    raw = b"\xaa\xbb" + bytes.fromhex("80bc614e63") + b"\xcc"
    value, end = decode_decimal(memoryview(raw), 2, 10, 2)
    assert value == Decimal("12345678.99")
    assert end == 7


def test_scale_is_kept() -> None:
    value, _ = decode_decimal(bytes.fromhex("8000000500"), 0, 10, 2)
    assert value.as_tuple().exponent == -2


def test_negative_zero_is_normalised() -> None:
    # All-zero magnitude with the sign bit clear (negative): never written by the
    # server, decoded as plain zero.
    value, _ = decode_decimal(bytes.fromhex("7fffffffff"), 0, 10, 2)
    assert format(value, "f") == "0.00"
    assert not value.is_signed()


@pytest.mark.parametrize(
    ("precision", "scale", "size"),
    [
        (1, 0, 1),
        (9, 0, 4),
        (10, 0, 5),
        (10, 2, 5),
        (18, 9, 8),
        (65, 30, 30),
        (65, 0, 29),
        (30, 30, 14),
        (38, 38, 17),
        (5, 4, 3),
        (0, 0, 0),
    ],
)
def test_sizes(precision: int, scale: int, size: int) -> None:
    assert decimal_size(precision, scale) == size


def test_precision_zero_is_zero() -> None:
    assert decode_decimal(b"", 0, 0, 0) == (Decimal(0), 0)


@pytest.mark.parametrize(("precision", "scale"), [(5, 6), (-1, 0), (82, 0), (10, -1)])
def test_bad_precision(precision: int, scale: int) -> None:
    with pytest.raises(MalformedEventError):
        decode_decimal(b"\x80" * 64, 0, precision, scale)


def test_truncated() -> None:
    with pytest.raises(MalformedEventError):
        decode_decimal(bytes.fromhex("80bc614e"), 0, 10, 2)
    with pytest.raises(MalformedEventError):
        decode_decimal(bytes.fromhex("80bc614e63"), 1, 10, 2)


@pytest.mark.parametrize(
    ("precision", "scale", "hexbytes"),
    [
        (9, 0, "bb9aca00"),  # full int group = 1_000_000_000
        (10, 2, "8000000064"),  # trailing 2-digit fraction group = 100
    ],
)
def test_too_many_digits_in_group(precision: int, scale: int, hexbytes: str) -> None:
    with pytest.raises(MalformedEventError):
        decode_decimal(bytes.fromhex(hexbytes), 0, precision, scale)


def test_lead_group_overflow() -> None:
    # DECIMAL(11,0): lead group of 2 digits in 1 byte; 0x80|100 -> 100 > 99.
    with pytest.raises(MalformedEventError):
        decode_decimal(bytes([0x80 | 100, 0, 0, 0, 0]), 0, 11, 0)


# -- an independent test-side encoder, straight from the format description --------


def encode_decimal(value: Decimal, precision: int, scale: int) -> bytes:
    with localcontext() as ctx:
        ctx.prec = 200
        sign, digits, exponent = value.quantize(Decimal(1).scaleb(-scale)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rjust(scale + 1, "0")
    int_text, frac_text = text[: len(text) - scale], text[len(text) - scale :]
    intg = precision - scale
    int_text = int_text.rjust(intg, "0")[-intg:] if intg else ""
    out = bytearray()
    lead = intg % 9
    if lead:
        out += int(int_text[:lead]).to_bytes(DIG2BYTES[lead], "big")
    for i in range(lead, intg, 9):
        out += int(int_text[i : i + 9]).to_bytes(4, "big")
    full = scale - scale % 9
    for i in range(0, full, 9):
        out += int(frac_text[i : i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac_text[full:]).to_bytes(DIG2BYTES[scale % 9], "big")
    if sign:
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return bytes(out)


@st.composite
def decimals(draw: st.DrawFn) -> tuple[Decimal, int, int]:
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(precision, 38)))
    intg = precision - scale
    int_part = draw(st.integers(0, 10**intg - 1)) if intg else 0
    frac_part = draw(st.integers(0, 10**scale - 1)) if scale else 0
    negative = draw(st.booleans()) and (int_part or frac_part)
    text = f"{'-' if negative else ''}{int_part}" + (f".{frac_part:0{scale}d}" if scale else "")
    return Decimal(text), precision, scale


@given(decimals())
def test_round_trip(case: tuple[Decimal, int, int]) -> None:
    value, precision, scale = case
    packed = encode_decimal(value, precision, scale)
    assert len(packed) == decimal_size(precision, scale)
    decoded, end = decode_decimal(packed, 0, precision, scale)
    assert end == len(packed)
    assert decoded == value
    assert format(decoded, "f") == format(value, "f")


def test_encoder_agrees_with_server_bytes() -> None:
    for precision, scale, hexbytes, expected in SERVER_CASES:
        assert encode_decimal(Decimal(expected), precision, scale).hex() == hexbytes


@given(st.binary(max_size=40), st.integers(0, 81), st.integers(0, 81), st.integers(0, 5))
def test_any_bytes_decode_or_raise_malformed(
    data: bytes, precision: int, scale: int, pos: int
) -> None:
    try:
        value, end = decode_decimal(data, pos, precision, scale)
    except MalformedEventError:
        return
    assert isinstance(value, Decimal)
    assert end <= len(data)
