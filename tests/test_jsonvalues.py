"""``jsonvalues.decimal_text``: the text of ``format(value, "f")``, by a shorter way."""

from __future__ import annotations

import random
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from replica_client.jsonvalues import decimal_text, json_value

__all__: list[str] = []


@settings(max_examples=500)
@given(st.decimals(allow_nan=True, allow_infinity=True))
def test_any_decimal_is_written_as_format_f_writes_it(value: Decimal) -> None:
    assert decimal_text(value) == format(value, "f")


def test_every_precision_and_scale_of_a_decimal_column() -> None:
    """What the row decoder builds: up to 65 digits, 0 to 38 of them decimals."""
    rng = random.Random(9)
    checked = 0
    for precision in range(1, 66):
        for scale in range(min(precision, 38) + 1):
            for digits in (
                "0" * precision,
                "".join(rng.choice("0123456789") for _ in range(precision)),
            ):
                for sign in ("", "-"):
                    whole, frac = digits[: precision - scale] or "0", digits[precision - scale :]
                    value = Decimal(f"{sign}{whole}.{frac}" if scale else f"{sign}{whole}")
                    assert decimal_text(value) == format(value, "f"), value
                    checked += 1
    assert checked > 5000


def test_small_values_and_zeros_that_str_writes_with_an_exponent() -> None:
    for text in ("0.0000001", "-0.00000000000000000001", "0E-7", "0.00000000", "1E+2"):
        value = Decimal(text)
        assert "E" in str(value)
        assert decimal_text(value) == format(value, "f") == json_value(value)
        assert "E" not in decimal_text(value)
