"""Price book files built to break the loader are refused with a short message naming the line or the field."""

from __future__ import annotations

import pytest

from gpucore.pricebook import MAX_NESTING, PriceBookError, load_price_book_text

VALID_HEAD = 'currency: USD\neffective_from: "2026-10-01"\n'


def _refused(text: str) -> PriceBookError:
    with pytest.raises(PriceBookError) as caught:
        load_price_book_text(text)
    assert len(str(caught.value)) < 500, f"the message is {len(str(caught.value)):,} characters"
    return caught.value


def _alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefg", "bcdefgh", strict=True):
        lines.append(f"{name}: &{name} [{','.join([f'*{previous}'] * 9)}]")
    lines.append("gpu_models: {H100-80GB: {hourly: *h}}")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_its_first_alias() -> None:
    bomb = _alias_bomb()
    assert len(bomb) < 450
    error = _refused(bomb)
    assert error.errors == {"(file)": ["line 2: aliases (*a) are not allowed."]}


def test_nesting_thousands_deep_is_refused_naming_the_line() -> None:
    error = _refused(VALID_HEAD + "gpu_models:\n  H100-80GB:\n    hourly: " + "[" * 5000 + "]" * 5000 + "\n")
    assert error.errors == {"(file)": [f"line 5: nested more than {MAX_NESTING} levels deep."]}


def test_a_model_given_twice_is_refused_not_silently_the_last() -> None:
    text = VALID_HEAD + 'gpu_models:\n  H100-80GB: {hourly: "2.00"}\n  A100-80GB: {hourly: "1.50"}\n'
    text += '  H100-80GB: {hourly: "9.00"}\n'
    error = _refused(text)
    assert error.errors == {"gpu_models.H100-80GB": ["is given twice (lines 4 and 6); give it once."]}


def test_any_key_given_twice_is_refused() -> None:
    text = VALID_HEAD + 'currency: EUR\ngpu_models:\n  H100-80GB: {hourly: "2.00", hourly: "3.00"}\n'
    assert _refused(text).errors == {
        "currency": ["is given twice (lines 1 and 3); give it once."],
        "gpu_models.H100-80GB.hourly": ["is given twice (lines 5 and 5); give it once."],
    }


def test_a_huge_value_is_quoted_short() -> None:
    error = _refused(VALID_HEAD + f"gpu_models:\n  H100-80GB: {{hourly: {'x' * 1_000_000}}}\n")
    (message,) = error.errors["gpu_models.H100-80GB.hourly"]
    assert "(1,000,002 characters)" in message


def test_broken_yaml_names_the_line_briefly() -> None:
    error = _refused(VALID_HEAD + "gpu_models: {H100-80GB: [\n" + "x" * 100_000)
    (message,) = error.errors["(file)"]
    assert message.startswith("is not valid YAML: line ")


def test_a_plain_anchor_without_alias_still_loads() -> None:
    book = load_price_book_text(VALID_HEAD + 'gpu_models:\n  H100-80GB: &price {hourly: "2.00"}\n')
    assert [price.gpu_model for price in book.gpu_prices] == ["H100-80GB"]
