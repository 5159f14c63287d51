"""A request's row shows the first line of the model's Markdown answer as the reader sees it."""

from __future__ import annotations

import pytest

from app.ui.widgets.trajectory_model import parsed_first_line, plain_first_line


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
