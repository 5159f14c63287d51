"""Test oracles: the official `anthropic` package's request types check the bodies we build, and
every call of a history is answered as providers require."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from anthropic.types.beta.message_create_params import MessageCreateParamsStreaming
from pydantic import BaseModel, TypeAdapter

ORACLE = TypeAdapter(MessageCreateParamsStreaming)


def assert_valid_anthropic_body(body: dict[str, Any]) -> None:
    """Validate `body` with the official beta request type; fail on any key it does not know."""
    validated = _force(ORACLE.validate_python(body))
    dropped = _dropped_keys(body, validated, "")
    assert not dropped, f"keys the official request type does not know: {dropped}"


def calls_and_answers(body: dict[str, Any], dialect: str) -> tuple[list[str], list[str]]:
    """The tool-call ids of a body's history in order, and the ids its tool results answer."""
    asked: list[str] = []
    answered: list[str] = []
    for message in body["messages"]:
        if dialect == "anthropic-messages":
            blocks = message["content"] if isinstance(message["content"], list) else []
            asked += [block["id"] for block in blocks if block["type"] == "tool_use"]
            answered += [block["tool_use_id"] for block in blocks if block["type"] == "tool_result"]
        else:
            asked += [call["id"] for call in message.get("tool_calls", [])]
            if message["role"] == "tool":
                answered.append(message["tool_call_id"])
    return asked, answered


def _force(value: Any) -> Any:
    """`Iterable[...]` fields validate lazily (pydantic's ValidatorIterator): iterate them all."""
    assert not isinstance(value, BaseModel), f"validated as a response type: {value!r}"
    if isinstance(value, dict):
        return {key: _force(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) or isinstance(value, Iterator):
        return [_force(item) for item in value]
    return value


def _dropped_keys(sent: Any, validated: Any, path: str) -> list[str]:
    if isinstance(sent, dict):
        missing: list[str] = []
        for key, item in sent.items():
            if key not in validated:
                missing.append(f"{path}/{key}")
            elif key != "input_schema":
                # `input_schema` is any JSON Schema object (the type is a union with
                # Dict[str, object]); the typed branch drops e.g. `additionalProperties`.
                missing += _dropped_keys(item, validated[key], f"{path}/{key}")
        return missing
    if isinstance(sent, list):
        return [
            key
            for index, (item, checked) in enumerate(zip(sent, validated, strict=True))
            for key in _dropped_keys(item, checked, f"{path}/{index}")
        ]
    return []
