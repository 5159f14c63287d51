"""Prompt history, kept per user across sessions in the data dir (one JSON string per line)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from app.paths import data_home, ensure_private_dir

HISTORY_FILE = "prompt-history.jsonl"
KEPT = 1000
LARGE_PASTE_CHARS = 4000
"""Prompts longer than this (large pastes) are sent but not kept: they would drown the history."""


def keeps(prompt: str) -> bool:
    return bool(prompt.strip()) and len(prompt) <= LARGE_PASTE_CHARS


def history_path() -> Path:
    return data_home() / HISTORY_FILE


def load_history(path: Path | None = None) -> list[str]:
    """Oldest first; unreadable lines are skipped (the file is a convenience, not a record)."""
    path = path or history_path()
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    prompts = []
    for line in raw.splitlines()[-KEPT:]:
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, str) and value:
            prompts.append(value)
    return prompts


def append_history(prompt: str, path: Path | None = None) -> None:
    path = path or history_path()
    ensure_private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(prompt, ensure_ascii=False) + "\n")


class PromptHistory:
    """Walks back and forth through earlier prompts; the draft being typed is kept at the end."""

    def __init__(self, prompts: list[str] | None = None) -> None:
        self.prompts = list(prompts or [])
        self._index = len(self.prompts)
        self._draft = ""

    def add(self, prompt: str) -> None:
        if prompt and (not self.prompts or self.prompts[-1] != prompt):
            self.prompts.append(prompt)
        self._index = len(self.prompts)
        self._draft = ""

    def previous(self, current: str) -> str | None:
        if self._index == 0:
            return None
        if self._index == len(self.prompts):
            self._draft = current
        self._index -= 1
        return self.prompts[self._index]

    def next(self) -> str | None:
        if self._index >= len(self.prompts):
            return None
        self._index += 1
        return self._draft if self._index == len(self.prompts) else self.prompts[self._index]
