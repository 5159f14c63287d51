"""The trajectory's search: which words a query asks for, and the text of a row they are looked for in.

Both trajectories search with these rules: the chat's live model over its entries
(`TrajectoryModel.search`), a file's over the log's bytes first (`IndexedTrajectory.search`, which
parses only the lines `log_needles` finds).
"""

from __future__ import annotations

import json

from app.session.events import ToolRegistryUpdate
from app.session.view import Step, Turn
from app.session.view_items import AssistantItem, ContextItem, HeaderItem, SummaryItem, ToolCallItem, ToolResultItem, UserItem
from app.trajectory.entries import Entry
from app.trajectory.labels import label_of, turn_heading


def query_words(query: str) -> list[str]:
    """The words an event's text must all hold (any case)."""
    return query.lower().split()


def has_words(entry: Entry, words: list[str]) -> bool:
    text = search_text(entry).lower()
    return all(word in text for word in words)


def log_needles(words: list[str]) -> list[bytes]:
    """The words as the log spells them inside a JSON string, the rarest-looking (longest) first;
    a word JSON would or may escape (`/`) or that is not ASCII is left to the parse (its line is
    not ruled out by its bytes)."""
    return sorted(
        (word.encode() for word in words if word.isascii() and json.dumps(word)[1:-1] == word and "/" not in word),
        key=len,
        reverse=True,
    )


def search_text(entry: Entry) -> str:
    """Everything a search should find in the entry (its whole text, not the clipped label)."""
    subject = entry.subject
    if isinstance(subject, Turn):
        return turn_heading(subject)  # its prompt is its user message's, found there
    if isinstance(subject, Step):
        return label_of(entry).plain
    if isinstance(subject, UserItem):
        return subject.text
    if isinstance(subject, AssistantItem):
        calls = " ".join(f"{call.name} {call.arguments}" for call in subject.tool_calls)
        return f"{label_of(entry).plain} {subject.reasoning} {subject.text} {calls}"
    if isinstance(subject, ToolCallItem):
        return f"{subject.name} {subject.arguments}"
    if isinstance(subject, ToolResultItem):
        return f"{label_of(entry).plain} {subject.content}"
    if isinstance(subject, ContextItem):
        message = subject.message
        names = (
            " ".join([a.name for a in message.additions] + list(message.removals))
            if isinstance(message, ToolRegistryUpdate)
            else message.text
        )
        return f"{label_of(entry).plain} {names}"
    if isinstance(subject, SummaryItem):
        return f"{label_of(entry).plain} {subject.summary}"
    if isinstance(subject, HeaderItem):
        names = " ".join(definition.name for definition in subject.header.tools)
        return f"{label_of(entry).plain} {names}"
    return label_of(entry).plain
