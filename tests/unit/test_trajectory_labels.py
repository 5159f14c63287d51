"""A request's row shows the first line of the model's Markdown answer as the reader sees it."""

from __future__ import annotations

import pytest

from app.trajectory.labels import parsed_first_line, plain_first_line


@pytest.mark.parametrize(
    ("markdown", "plain"),
    [
        ("This is the **offline demo model**: it runs\nno model.", "This is the offline demo model: it runs"),
        ("\n\n**`calculate`** returned 8 characters:", "calculate returned 8 characters:"),
        ("# A *heading*", "A heading"),
        ("- see [the docs](https://example.com) ![a chart](c.png)", "see the docs a chart"),
        ("> quoted <b>bold</b>", "quoted <b>bold</b>"),
        ("```python\nprint(1)\n```", "```python"),
        ("", ""),
    ],
)
def test_the_first_line_of_an_answer_loses_its_markdown_marks(markdown: str, plain: str) -> None:
    assert plain_first_line(markdown) == plain


@pytest.mark.parametrize(
    "line",
    [
        "Plain prose, with punctuation: commas; colons? (parentheses) and 'quotes' — 100% done.",
        "   Indented a little, with a trailing hard break  ",
        "\tA tab first",
        "Words\twith\ttabs and  double  spaces",
        "你好，世界 (CJK first)",
        "Émile wrote 1. then 2) and # and + - = | / ^ { } $ @ inside the line",
        "\u3000Ideographic space first",
    ],
)
def test_a_prose_line_reads_as_the_parse_reads_it(line: str) -> None:
    """Most answers start with prose: their row takes the line as it is, which must be exactly
    what the Markdown parse would give."""
    assert plain_first_line(line) == parsed_first_line(line) == line.strip()


# --- a turn's row shows the start of its prompt (issue 24 item 8) -------------------------------


def turn_label(prompt: str, end_reason: str | None = "completed") -> str:
    from app.session.view import Turn
    from app.session.view_items import UserItem
    from app.trajectory.entries import Entry
    from app.trajectory.labels import label_of

    turn = Turn(number=12, seq=40, items=[UserItem(seq=41, id="u-1", text=prompt)], end_seq=60, end_reason=end_reason)
    return label_of(Entry(40, frozenset({"turn"}), turn, None, None)).plain


def test_a_turns_row_shows_the_start_of_its_prompt() -> None:
    assert turn_label("fix the failing test") == "Turn 12 · fix the failing test"
    assert turn_label("are you there?", "error") == "Turn 12 · failed · are you there?"


def test_a_long_or_wide_prompt_is_cut_by_cells_on_one_line() -> None:
    from rich.cells import cell_len

    from app.trajectory.labels import PROMPT_CELLS

    wide = turn_label("修复失败的测试" * 20)
    prompt = wide.removeprefix("Turn 12 · ")
    assert prompt.endswith("…") and cell_len(prompt) <= PROMPT_CELLS
    assert prompt.startswith("修复失败的测试修复") and cell_len(prompt) >= PROMPT_CELLS - 1
    assert turn_label("first line\nsecond line") == "Turn 12 · first line…"
    assert turn_label("[bold]x[/] \x1b[2Jy") == "Turn 12 · [bold]x[/] y"
