"""Keys typed while the chat starts, in a real pseudo-terminal: the terminal is still in the mode a
shell leaves (Enter arrives as a newline), and nothing typed early may be lost or misread."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.support.terminal import READ_LIMIT

TOOLSCOPE = Path(sys.executable).parent / "toolscope"


def _text(screen: bytes) -> bytes:
    """What was written, without the terminal's control sequences (words are drawn apart)."""
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", screen)


def _environment(home: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("TOOLSCOPE_CONFIG", "LC_ALL", "LC_MESSAGES", "LANG", "NO_COLOR")
    }
    env.update(TOOLSCOPE_HOME=str(home), LANG="C.UTF-8", PYTHONIOENCODING="utf-8", TERM="xterm-256color")
    return env


def _user_messages(home: Path) -> list[str]:
    texts = []
    for session in (home / "sessions").glob("*.jsonl"):
        for line in session.read_text().splitlines(keepends=True):
            if not line.endswith("\n"):
                break  # still being written
            event = json.loads(line)
            if event.get("type") == "user/message":
                texts.append(event["data"]["text"])
    return texts


def test_a_prompt_typed_before_the_chat_starts_is_sent_by_its_enter(tmp_path: Path) -> None:
    home = tmp_path / "home"
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    cooked = termios.tcgetattr(terminal)
    assert cooked[0] & termios.ICRNL and cooked[3] & termios.ICANON  # as a shell leaves it
    # Typed before the process even runs: the terminal turns this Enter into a newline.
    os.write(controller, b"hello therf\x7fe\r")
    process = subprocess.Popen(
        [str(TOOLSCOPE)], stdin=terminal, stdout=terminal, stderr=terminal, env=_environment(home), cwd=tmp_path
    )
    os.close(terminal)
    try:
        # The prompt is in the session only if its Enter sent it (the screen is read meanwhile).
        shown = _read(controller, until=lambda shown: bool(_user_messages(home)))
        answered = bool(_user_messages(home))
        if answered:
            os.write(controller, b"\x11")  # Ctrl+Q
            _read(controller, until=lambda shown: False)  # until the chat is gone
            mode_after = termios.tcgetattr(controller)  # a pty's controller reports its terminal's
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
    assert answered, _text(shown)[-2000:]
    assert process.wait(timeout=60) == 0
    assert _user_messages(home) == ["hello there"]
    assert mode_after[:4] == cooked[:4]  # the shell gets its mode back


def _read(controller: int, until) -> bytes:
    """What the chat writes, until `until(what was written)`, the chat is gone, or READ_LIMIT
    seconds in all (the screen never stops changing: the cursor blinks)."""
    shown = b""
    give_up = time.monotonic() + READ_LIMIT
    while not until(shown) and time.monotonic() < give_up:
        if not select.select([controller], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the chat is gone
            break
        if not chunk:
            break
        shown += chunk
    return shown
