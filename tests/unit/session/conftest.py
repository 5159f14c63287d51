"""Session-log files for the reader and store tests, written byte by byte so tests control every line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

TOOLS = [
    {"name": "read", "description": "Read a file.", "parameters": {"type": "object"}},
    {"name": "grep", "description": "Search files.", "parameters": {"type": "object"}},
]


class LogFiles:
    """Builds session files in one directory; `line()`/`header()` give single lines without newline."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def line(type_: str, seq: int, data: dict[str, Any], time: int = 1_700_000_000_000) -> bytes:
        return json.dumps(
            {"type": type_, "seq": seq, "time": time, "data": data}, separators=(",", ":")
        ).encode()

    @staticmethod
    def header(session_id: str = "s", *, parent: dict[str, Any] | None = None, **overrides: Any) -> bytes:
        header = {
            "type": "session",
            "version": 1,
            "id": session_id,
            "createdAt": 1_700_000_000_000,
            "cwd": "/work",
            "parent": parent,
        }
        header.update(overrides)
        return json.dumps(header, separators=(",", ":")).encode()

    def completed_turn(self, first_seq: int = 0, turn: int = 1, call_id: str = "c1") -> list[bytes]:
        """One turn: user message, a request header, a tool call and its result (9 events)."""
        line, s = self.line, first_seq
        return [
            line("turn/start", s, {"turn": turn}),
            line("user/message", s + 1, {"id": f"u{turn}", "text": "read the readme"}),
            line("step/start", s + 2, {"turn": turn, "step": 1}),
            line(
                "request/header",
                s + 3,
                {
                    "reason": "initial",
                    "sequence": 0,
                    "route": "offline/demo",
                    "model": "demo",
                    "system": "Be brief.",
                    "tools": TOOLS,
                    "config": {},
                },
            ),
            line("assistant/message", s + 4, self.assistant(turn, 1, [self.call_content(call_id)])),
            line("tool/call", s + 5, self.call(turn, 1, call_id)),
            line("tool/result", s + 6, self.result(turn, 1, call_id)),
            line("step/end", s + 7, {"turn": turn, "step": 1}),
            line("turn/end", s + 8, {"turn": turn, "reason": "completed"}),
        ]

    @staticmethod
    def call_content(call_id: str, name: str = "read") -> dict[str, Any]:
        return {"type": "tool-call", "callId": call_id, "name": name, "arguments": '{"path":"README.md"}'}

    @staticmethod
    def assistant(turn: int, step: int, content: list[dict[str, Any]], finish: str = "tool-calls") -> dict[str, Any]:
        return {"turn": turn, "step": step, "route": "offline/demo", "model": "demo", "content": content, "finish": finish}

    @staticmethod
    def call(turn: int, step: int, call_id: str, name: str = "read") -> dict[str, Any]:
        return {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": '{"path":"README.md"}'}

    @staticmethod
    def result(turn: int, step: int, call_id: str, name: str = "read") -> dict[str, Any]:
        return {"turn": turn, "step": step, "callId": call_id, "name": name, "content": "# toolscope", "isError": False}

    def write(
        self,
        session_id: str,
        lines: list[bytes],
        *,
        header: bytes | None = None,
        parent: dict[str, Any] | None = None,
        tail: bytes = b"",
    ) -> Path:
        """`<id>.jsonl` = header line, `lines` each with a newline, then `tail` verbatim."""
        path = self.directory / f"{session_id}.jsonl"
        first = header if header is not None else self.header(session_id, parent=parent)
        path.write_bytes(b"".join(line + b"\n" for line in [first, *lines]) + tail)
        return path

    def digest(self) -> dict[str, str]:
        """Every file of the directory by name → sha256: proves a reader changed nothing. Line-index
        caches (`<id>.jsonl.idx`) are left out: a reader may write those, never a session file."""
        return {
            path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(self.directory.iterdir())
            if not path.name.endswith(".idx")
        }


@pytest.fixture
def logs(tmp_path: Path) -> LogFiles:
    return LogFiles(tmp_path / "sessions")
