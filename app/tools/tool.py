"""What a tool is, how the registry calls it and what a call returns: the one shape every source's
tools take (built-ins, plugins, MCP servers), with the limits and error codes of their results.

Tool results and error messages are written for the model and the session log, so they are
English.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from app.session.events import ToolDefinition
from app.tools.approval import ApprovalRequest, Approver

logger = logging.getLogger(__name__)

TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class ToolErrorCode(StrEnum):
    """The `error.code` of a failed `tool/result`."""

    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    TOOL_FAILED = "TOOL_FAILED"
    APPROVAL_DENIED = "APPROVAL_DENIED"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    PATH_OUTSIDE_WORKSPACE = "PATH_OUTSIDE_WORKSPACE"
    COMMAND_FAILED = "COMMAND_FAILED"


NOTICE_BYTES = 160
"""Room kept for one `[truncated …]` notice line, so a cut result with its notices still fits."""


@dataclass(frozen=True)
class OutputLimits:
    """The most a tool result may carry, notices included; more is cut and says so."""

    max_bytes: int = 64 * 1024
    max_lines: int = 2000

    def reserving(self, notice_lines: int) -> OutputLimits:
        """The limits left for the body of a result that may end with `notice_lines` notices."""
        return OutputLimits(
            max_bytes=max(1, self.max_bytes - notice_lines * NOTICE_BYTES),
            max_lines=max(1, self.max_lines - notice_lines),
        )


def bound_text(text: str, limits: OutputLimits) -> tuple[str, bool]:
    """`text` cut to the limits (whole lines first, then bytes on a character boundary)."""
    truncated = False
    lines = text.splitlines(keepends=True)
    if len(lines) > limits.max_lines:
        text = "".join(lines[: limits.max_lines])
        truncated = True
    encoded = text.encode("utf-8")
    if len(encoded) > limits.max_bytes:
        text = encoded[: limits.max_bytes].decode("utf-8", errors="ignore")
        truncated = True
    return text, truncated


def with_notice(text: str, notice: str) -> str:
    """`text` followed by `[notice]` on a line of its own."""
    separator = "\n" if text and not text.endswith("\n") else ""
    return f"{text}{separator}[{notice}]"


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one tool call, as the loop records it in `tool/result`."""

    content: str
    is_error: bool = False
    error_code: str | None = None
    error_message: str | None = None


class ToolFailure(Exception):
    """Raised by a tool handler for an expected failure; becomes an error `ToolOutcome`.

    `content` is what the model reads (defaults to the message), e.g. a failed command's output.
    """

    def __init__(self, code: ToolErrorCode, message: str, content: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.content = message if content is None else content

    def outcome(self) -> ToolOutcome:
        return ToolOutcome(self.content, True, self.code, self.message)


@dataclass(frozen=True)
class ToolContext:
    """Per-call facts a tool may need: who approves side effects, and which call this is."""

    approver: Approver
    call_id: str = ""

    async def ask(self, tool_name: str, summary: str, detail: str, diff: str = "") -> None:
        """Ask the approver first; `ToolFailure(APPROVAL_DENIED)` when refused (nothing was done)."""
        if not await self.approver.approve(ApprovalRequest(tool_name, self.call_id, summary, detail, diff)):
            raise ToolFailure(
                ToolErrorCode.APPROVAL_DENIED, f"the user did not approve {tool_name}; nothing was done"
            )


ToolHandler = Callable[[dict[str, Any], ToolContext], Awaitable[str]]
"""Runs a tool with already-validated arguments; returns the content or raises `ToolFailure`."""


@dataclass(frozen=True, eq=False)
class Tool:
    """An effective tool: its definition, whether it only reads, and how to run it."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: ToolHandler
    read_only: bool = False

    def __post_init__(self) -> None:
        if not TOOL_NAME_PATTERN.match(self.name):
            raise ValueError(f"tool name {self.name!r} does not match {TOOL_NAME_PATTERN.pattern}")

    @cached_property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name, description=self.description, parameters=dict(self.parameters)
        )

    @cached_property
    def _validator(self) -> Validator | None:
        """None when the schema itself is invalid (an MCP server's); the server validates then."""
        schema = dict(self.parameters)
        cls = validator_for(schema, default=Draft202012Validator)
        try:
            cls.check_schema(schema)
        except SchemaError:
            logger.warning("tool %s has an invalid parameter schema; not validating", self.name)
            return None
        return cls(schema)

    def check_arguments(self, arguments: dict[str, Any]) -> None:
        """Raise `ToolFailure(INVALID_ARGUMENTS)` when `arguments` do not match the schema."""
        if self._validator is None:
            return
        error = best_match(self._validator.iter_errors(arguments))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
            raise ToolFailure(
                ToolErrorCode.INVALID_ARGUMENTS,
                f"invalid arguments for {self.name} at {where}: {error.message}",
            )
