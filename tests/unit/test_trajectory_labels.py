"""A request's row shows the first line of the model's Markdown answer as the reader sees it."""

from __future__ import annotations

import pytest

from app.ui.widgets.trajectory_model import plain_first_line


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
