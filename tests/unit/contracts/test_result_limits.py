"""How a tool result is cut to its cap: one pure function that the tool activity and the workflow
(for results submitted by signal) share."""

from __future__ import annotations

from turnkeeper.contracts.result_limits import capped


def test_capped_cuts_on_a_character_boundary_and_says_so() -> None:
    text = "é" * 1000  # two bytes each: 2000 bytes
    cut = capped(text, 1024)
    shown, marker = cut.split("\n[")
    assert len(cut.encode()) <= 1024
    assert text.startswith(shown) and len(shown) > 400
    assert marker == f"… truncated: showing the first {len(shown.encode())} of 2000 bytes]"
    assert capped(text[:10], 1024) == text[:10]
    assert capped("a\udcff", 1024) == "a?"  # a lone surrogate cannot travel; it is replaced


def test_a_cut_result_fits_its_cap_whatever_the_marker_s_numbers() -> None:
    for cap in (1024, 4096, 65_536):
        text = "x" * (cap * 3)

        cut = capped(text, cap)

        assert len(cut.encode()) <= cap
        assert cut.endswith(f"of {cap * 3} bytes]")
