"""The trajectory's labels as Rich `Text` for the tree and the flat list, with the search's words
marked. Their words are the headless `app.trajectory.labels`'; `Text` never reads markup, so text
from the session shows as it was written."""

from __future__ import annotations

from rich.text import Text

from app.trajectory.cache_marks import CacheMarks
from app.trajectory.entries import Entry
from app.trajectory.labels import Label, label_of

MATCH_STYLE = "bold black on yellow"


def rich_label(label: Label) -> Text:
    text = Text(label.text, style=label.style)
    for run, style in label.runs:
        text.append(run, style=style)
    return text


def entry_label(entry: Entry, marks: CacheMarks | None = None) -> Text:
    """The row of `entry`, with its request's cache break marked when `marks` are given."""
    return rich_label(label_of(entry, marks.broken(entry) if marks is not None else None))


def highlighted(label: Text, words: tuple[str, ...]) -> Text:
    """`label` with every occurrence of the search's words marked (any case), as a pager marks
    them; the label itself is left as it was."""
    if not words:
        return label
    marked = label.copy()
    marked.highlight_words(words, MATCH_STYLE, case_sensitive=False)
    return marked
