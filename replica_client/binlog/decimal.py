"""MySQL/MariaDB binary DECIMAL codec. No I/O: bytes in, ``decimal.Decimal`` out.

Contract: :func:`decode_decimal` reads one packed DECIMAL(precision, scale) value
from a buffer at a cursor and returns the exact value plus the new cursor. It is
shared by the row decoder (NEWDECIMAL columns, type 246) and the JSON binary
decoder (DECIMAL opaque values). Malformed input raises
:class:`~replica_client.errors.MalformedEventError` only.

Byte layout (server source ``strings/decimal.c``: ``decimal2bin`` /
``bin2decimal`` / ``decimal_bin_size``; the same in MySQL and MariaDB)::

    intg  = precision - scale            digits before the point
    [lead int group ][int group]*(intg//9)[frac group]*(scale//9)[trail frac group]
     dig2bytes[intg%9]  4 bytes each         4 bytes each         dig2bytes[scale%9]

Every group is a big-endian unsigned integer holding at most 9 decimal digits
(``dig2bytes = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]`` bytes for 0..9 digits); the
trailing fraction group holds the *leading* ``scale % 9`` digits of the last
9-digit block. The sign lives in the top bit of the first byte (set = positive);
a negative value is stored with every bit inverted. A "negative zero" is
normalised to positive zero (the server never shows ``-0``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final

from replica_client.errors import MalformedEventError

__all__ = ["DIG2BYTES", "MAX_PRECISION", "decimal_size", "decode_decimal"]

DIG2BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
DIGITS_PER_GROUP: Final = 9
#: Largest precision the format can express (``DECIMAL_MAX_POSSIBLE_PRECISION``);
#: columns are limited to 65 digits, but JSON opaque decimals use the same codec.
MAX_PRECISION: Final = 81

_GROUP_MAX: Final = 10**DIGITS_PER_GROUP
_POW10: Final = tuple(10**i for i in range(DIGITS_PER_GROUP + 1))


def decimal_size(precision: int, scale: int) -> int:
    """Number of bytes a packed DECIMAL(precision, scale) occupies."""
    _check_precision(precision, scale, 0)
    intg = precision - scale
    return (
        (intg // DIGITS_PER_GROUP) * 4
        + DIG2BYTES[intg % DIGITS_PER_GROUP]
        + (scale // DIGITS_PER_GROUP) * 4
        + DIG2BYTES[scale % DIGITS_PER_GROUP]
    )


def _check_precision(precision: int, scale: int, pos: int) -> None:
    if not 0 <= scale <= precision <= MAX_PRECISION:
        raise MalformedEventError(
            f"invalid DECIMAL precision/scale ({precision}, {scale}): need "
            f"0 <= scale <= precision <= {MAX_PRECISION}",
            offset=pos,
        )


def decode_decimal(
    view: bytes | bytearray | memoryview, pos: int, precision: int, scale: int
) -> tuple[Decimal, int]:
    """Decode one packed DECIMAL(precision, scale) at ``view[pos:]``.

    Returns ``(value, pos_after)``. The value keeps the column's scale
    (``DECIMAL(10,2)`` 5 decodes as ``Decimal('5.00')``).
    """
    size = decimal_size(precision, scale)
    if pos < 0 or pos + size > len(view):
        raise MalformedEventError(
            f"DECIMAL({precision},{scale}) needs {size} bytes, {max(len(view) - pos, 0)} available",
            offset=pos,
        )
    if size == 0:
        return Decimal(0), pos
    raw = int.from_bytes(view[pos : pos + size], "big")
    bits = size * 8
    top = 1 << (bits - 1)
    negative = not raw & top
    raw ^= top
    if negative:
        raw ^= (1 << bits) - 1

    intg = precision - scale
    lead_digits = intg % DIGITS_PER_GROUP
    int_groups = intg // DIGITS_PER_GROUP
    frac_groups = scale // DIGITS_PER_GROUP
    trail_digits = scale % DIGITS_PER_GROUP

    # Peel the groups off the low end: trailing fraction first.
    trail_bytes = DIG2BYTES[trail_digits]
    trail = raw & ((1 << (trail_bytes * 8)) - 1)
    raw >>= trail_bytes * 8
    if trail_digits and trail >= _POW10[trail_digits]:
        _bad_digits(pos, precision, scale)
    frac_val = 0
    if frac_groups:
        frac_mask = (1 << (frac_groups * 32)) - 1
        frac_val = _groups_to_int(raw & frac_mask, frac_groups, pos, precision, scale)
        raw >>= frac_groups * 32
    frac_val = frac_val * _POW10[trail_digits] + trail
    int_val = 0
    if int_groups:
        int_mask = (1 << (int_groups * 32)) - 1
        int_val = _groups_to_int(raw & int_mask, int_groups, pos, precision, scale)
        raw >>= int_groups * 32
    lead = raw  # what is left is the leading partial group
    if lead_digits and lead >= _POW10[lead_digits]:
        _bad_digits(pos, precision, scale)
    int_val += lead * _GROUP_MAX**int_groups

    if int_val == 0 and frac_val == 0:
        negative = False
    sign = "-" if negative else ""
    text = f"{sign}{int_val}.{frac_val:0{scale}d}" if scale else f"{sign}{int_val}"
    return Decimal(text), pos + size


def _groups_to_int(packed: int, count: int, pos: int, precision: int, scale: int) -> int:
    """Turn ``count`` big-endian 4-byte groups (packed in one int) into digits."""
    value = 0
    for shift in range((count - 1) * 32, -1, -32):
        group = (packed >> shift) & 0xFFFFFFFF
        if group >= _GROUP_MAX:
            _bad_digits(pos, precision, scale)
        value = value * _GROUP_MAX + group
    return value


def _bad_digits(pos: int, precision: int, scale: int) -> None:
    raise MalformedEventError(
        f"DECIMAL({precision},{scale}) group holds more digits than allowed", offset=pos
    )
