"""The console's two consoles show what they print and never let it drive the terminal."""

from __future__ import annotations

import io
import json

from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from turnkeeper.console.terminal import ShowingConsole, visible

CLEAR_AND_FAKE = "\x1b[2J\x1b[32mapproved\x1b[0m"


def terminal() -> tuple[ShowingConsole, io.StringIO]:
    """A console that believes it writes to a colour terminal, as a person's would."""
    screen = io.StringIO()
    return ShowingConsole(file=screen, force_terminal=True, color_system="truecolor"), screen


def test_control_characters_are_written_out_and_newlines_and_tabs_kept() -> None:
    assert visible("a\x1bb\x9bc\x7fd\u202ee\x00") == r"a\u001bb\u009bc\u007fd\u202ee\u0000"
    assert visible("line\n\tnext") == "line\n\tnext"


def test_escapes_in_text_reach_the_screen_as_characters_styles_as_styles() -> None:
    console, screen = terminal()

    console.print(Text.assemble(("✗ ", "red"), f"from {CLEAR_AND_FAKE}"))

    printed = screen.getvalue()
    assert r"from \u001b[2J\u001b[32mapproved\u001b[0m" in printed
    assert "\x1b[2J" not in printed
    assert "\x1b[31m✗" in printed  # our own style still colours the mark


def test_escapes_nested_in_a_table_or_panel_are_written_out_too() -> None:
    console, screen = terminal()
    grid = Table.grid()
    grid.add_row("approver", CLEAR_AND_FAKE)

    console.print(Panel(grid))

    assert "\x1b[2J" not in screen.getvalue()
    assert r"\u001b[2J" in screen.getvalue()


def test_markup_and_emoji_codes_in_a_plain_string_are_printed_as_written() -> None:
    console, screen = terminal()

    console.print("approved by [link=https://evil.example]alice[/link] :white_check_mark:")

    printed = screen.getvalue()
    assert "approved by [link=https://evil.example]alice[/link] :white_check_mark:" in printed
    assert "\x1b]8;" not in printed  # no hyperlink made of it


def test_json_printed_through_it_stays_valid_and_says_the_same() -> None:
    screen = io.StringIO()
    value = {"approver": "mallory\x9b2J\x7f\u202e"}

    ShowingConsole(file=screen).out(json.dumps(value, ensure_ascii=False), highlight=False)

    assert json.loads(screen.getvalue()) == value
    assert "\x9b" not in screen.getvalue()
