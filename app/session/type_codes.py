"""Each event type's one-byte code, and a line's type told from its bytes.

A line spelt as the writer writes it, `{"type":"` and the type's name, is classified by its first
`PREFIX_LENGTH` bytes; any other spelling (spaces, escapes, `type` not first) by parsing it
(`declared_type`, the slow reference the byte prefix must agree with). The line index
(`app.session.line_index`), the strict reader, msgspec's Structs and the invariant checker all speak
these codes; this module imports nothing of the session, so none of them imports another for them.
"""

from __future__ import annotations

from typing import Any

from app.untrusted_json import loads

PREFIX_LENGTH = 15  # `{"type":"` and six bytes of the type name tell every type apart

# One byte per event line. Letters, so that a run of types can be searched with `re` and counted
# with `bytes.count` in C.
TYPE_CODES: dict[str, int] = {
    "turn/start": ord("T"),
    "turn/end": ord("t"),
    "step/start": ord("S"),
    "step/end": ord("s"),
    "user/message": ord("U"),
    "request/header": ord("H"),
    "developer/message": ord("D"),
    "assistant/message": ord("A"),
    "tool/call": ord("C"),
    "tool/result": ord("R"),
    "agent/request-error": ord("E"),
    "llm/retry": ord("Y"),
    "compaction/summary": ord("K"),
}
UNKNOWN = ord("?")
TYPE_NAMES: dict[int, str] = {code: name for name, code in TYPE_CODES.items()}
CODE_BY_PREFIX: dict[bytes, int] = {
    (b'{"type":"' + name.encode() + b'"')[:PREFIX_LENGTH]: code for name, code in TYPE_CODES.items()
}
"""The code of each type by the first `PREFIX_LENGTH` bytes of a line the writer wrote."""
assert len(CODE_BY_PREFIX) == len(TYPE_CODES)
AMBIGUOUS = object()
"""What `declared_type` gives for an object whose `type` key appears twice with different values."""


def prefix_code(line: bytes) -> int:
    """The code the writer's spelling gives `line` by its first bytes; UNKNOWN when it does not
    start that way (then only `declared_type` can tell)."""
    return CODE_BY_PREFIX.get(line[:PREFIX_LENGTH], UNKNOWN)


def type_code(line: bytes) -> int:
    """The code of one line (its newline may be included): by its first bytes when they are the
    writer's, else by parsing it."""
    code = CODE_BY_PREFIX.get(line[:PREFIX_LENGTH], UNKNOWN)
    return code if code != UNKNOWN else declared_code(line)


def declared_type(line: bytes) -> object:
    """The slow reference for a line's type: the value of its top-level `type` key as a JSON parser
    reads it (the last one, as every parser toolscope uses takes it); `AMBIGUOUS` when that key
    appears twice with different values (parsers disagree on those: the strict reader refuses
    them); None when the line is not a JSON object or has no `type`."""
    conflict = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal conflict  # the top-level object's pairs come last
        values = [value for key, value in items if key == "type"]
        conflict = any(value != values[0] for value in values[1:])
        return dict(items)

    try:
        value = loads(line, object_pairs_hook=pairs)
    except ValueError:  # bad UTF-8, a BOM, malformed or too deeply nested JSON
        return None
    if not isinstance(value, dict):
        return None
    return AMBIGUOUS if conflict else value.get("type")


def declared_code(line: bytes) -> int:
    """The code of a line by parsing it (`declared_type`); UNKNOWN when it names no event type."""
    declared = declared_type(line)
    return TYPE_CODES.get(declared, UNKNOWN) if isinstance(declared, str) else UNKNOWN
