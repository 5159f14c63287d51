"""Every key the chat answers to, in one place (the footer, the help and the tests read it)."""

from __future__ import annotations

SEND = "enter"
NEWLINE = ("shift+enter", "ctrl+j")
"""Ctrl+J works on every terminal: legacy ones send the same byte for Enter and Shift+Enter."""
CANCEL_TURN = "escape"
HISTORY_PREVIOUS = "up"
HISTORY_NEXT = "down"
TOOLS = "ctrl+t"
ROUTES = "ctrl+r"
SESSIONS = "ctrl+o"
NEW_SEQUENCE = "ctrl+n"
INSPECT = "ctrl+g"
JUMP_TO_END = "ctrl+end"
QUIT = "ctrl+q"
PALETTE = "ctrl+p"

ALLOW_ONCE = "y"
ALLOW_SESSION = "a"
DENY = "n"
CLOSE = "escape"

INSPECT_PREVIOUS = "p"
INSPECT_NEXT = "n"
INSPECT_LATEST = "f"
INSPECT_BODY = "b"
INSPECT_DIFF = "d"
INSPECT_ROUTES = "r"

TRAJECTORY = "ctrl+l"
"""Opens the trajectory of the session being chatted in."""

# The trajectory viewer (`toolscope view`, and over the chat).
VIEWER_LIST = "v"
VIEWER_PRESET = "f"
VIEWER_KINDS = "k"
VIEWER_SEARCH = "slash"
VIEWER_SEARCH_NEXT = "n"
VIEWER_SEARCH_PREVIOUS = "N"
VIEWER_NEXT_REQUEST = "r"
VIEWER_PREVIOUS_REQUEST = "R"
VIEWER_NEXT_CONTEXT = "c"
VIEWER_PREVIOUS_CONTEXT = "C"
VIEWER_NEXT_ERROR = "e"
VIEWER_PREVIOUS_ERROR = "E"
VIEWER_DETAIL = "d"
VIEWER_INSPECT = "i"
"""The inspector on the request under the cursor."""
VIEWER_EXPAND_ALL = "shift+space,asterisk"
"""Everything below the tree's cursor. `*` too: a terminal without the kitty keyboard protocol sends
Shift+Space as a plain Space."""
VIEWER_CLOSE = "escape"
