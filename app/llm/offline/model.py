"""The embedded offline demo model (docs/architecture.md §9): deterministic replies to a `deepseek-chat` request.

It behaves like a provider that supports tool changes in the history: it sees the declared tools
minus deferred ones, then applies `tool_addition` / `tool_removal` blocks in message order, and
only ever calls a tool that is available after that. Its replies are written in English on purpose:
they are model output, not interface text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from app.llm.prefix import render_for_cache
from app.untrusted_json import loads

_NEXT_REQUEST = r"(?:\s*[,;]\s*|\s+)(?:(?:and\s+)?then\s+|and\s+)?(?:use|call|run)\s"
"""What ends one request's argument: the next `use`/`call`/`run`, after a comma, a semicolon,
`and`, `then` or `and then`."""
_TOOL_REQUEST = re.compile(
    r"\b(?:use|call|run)\s+(?:the\s+)?`?(?P<name>[A-Za-z0-9_\-]+)`?(?:\s+tool)?"
    r"(?:\s+(?:on|with|for)\s+(?P<argument>.+?))?(?=" + _NEXT_REQUEST + r"|[.!?]?\s*$)",
    re.IGNORECASE | re.DOTALL,
)
_SUMMARY_LINES = 8
_WITH = re.compile(r"\s+with\s+", re.IGNORECASE)
_WORD = re.compile(r"[\w./*~-]+")
"""A run of characters names and paths are made of (`__pycache__`, `src/*.py`, `read_file`)."""
_CODE_SPAN = re.compile(r"(`+).*?\1", re.DOTALL)


class OfflineRequestError(ValueError):
    """The request is one a real provider would refuse with 400 (the message says why)."""


@dataclass(frozen=True, slots=True)
class PlannedCall:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reply:
    reasoning: str
    text: str
    calls: tuple[PlannedCall, ...] = ()
    prompt_text: str = field(default="", repr=False)
    """The request rendered as the provider would cache it (tools, then system, then messages)."""


@dataclass(slots=True)
class _Tools:
    declared: dict[str, dict[str, Any]]
    available: list[str]


def available_tools(body: dict[str, Any], *, beta: bool) -> _Tools:
    """Declarations minus deferred ones, then every addition/removal block in message order."""
    declared: dict[str, dict[str, Any]] = {}
    available: list[str] = []
    for entry in body.get("tools") or []:
        function = entry.get("function") or {}
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise OfflineRequestError("every tool needs a function name")
        declared[name] = function
        if not entry.get("defer_loading"):
            available.append(name)
    blocks_seen = False
    for message in body.get("messages") or []:
        if message.get("role") != "system" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            kind = block.get("type")
            if kind not in ("tool_addition", "tool_removal"):
                continue
            blocks_seen = True
            name = (block.get("tool") or {}).get("name")
            if name not in declared:
                raise OfflineRequestError(f"{kind} names {name!r}, which is not declared")
            if kind == "tool_addition" and name not in available:
                available.append(name)
            elif kind == "tool_removal" and name in available:
                available.remove(name)
    if blocks_seen and not beta:
        raise OfflineRequestError("tool update blocks need the tool-change beta header")
    return _Tools(declared=declared, available=available)


def plan_reply(body: dict[str, Any], *, beta: bool) -> Reply:
    """Decide the whole reply to one request; the transport streams it.

    `beta` says whether the request carried the tool-change beta header: like a real provider,
    the model refuses update blocks without it.
    """
    tools = available_tools(body, beta=beta)
    conversation = [m for m in body.get("messages") or [] if m.get("role") in ("user", "assistant", "tool")]
    prompt_text = render_for_cache(body, "offline")
    if not conversation:
        return Reply(reasoning="", text=_greeting(tools), prompt_text=prompt_text)
    last = conversation[-1]
    if last.get("role") == "tool":
        return _summarise_results(conversation, prompt_text)
    if last.get("role") != "user":
        return Reply(reasoning="", text=_greeting(tools), prompt_text=prompt_text)
    return _answer_user(_text_of(last), tools, len(conversation), prompt_text)


def _answer_user(text: str, tools: _Tools, position: int, prompt_text: str) -> Reply:
    requests = list(_TOOL_REQUEST.finditer(text))
    if not requests:
        return Reply(
            reasoning="The user did not ask for a tool; describe what I can do.",
            text=_greeting(tools),
            prompt_text=prompt_text,
        )
    calls: list[PlannedCall] = []
    missing: list[str] = []
    incomplete: list[str] = []
    for match in requests:
        name = match.group("name")
        if name not in tools.available:
            missing.append(name)
            continue
        arguments = _arguments_for(tools.declared[name], (match.group("argument") or "").strip())
        if arguments is None:
            incomplete.append(name)
            continue
        calls.append(PlannedCall(call_id=f"call_{position}_{len(calls) + 1}", name=name, arguments=arguments))
    notes = "".join(
        f"{code(name)} needs more than that: ask me to {code(_call_form(name, tools.declared[name]))}.\n\n"
        for name in incomplete
    )
    if incomplete and not calls:
        return Reply(reasoning="The request leaves out what the tool needs.", text=notes.rstrip("\n"), prompt_text=prompt_text)
    if calls:
        names = ", ".join(code(call.name) for call in calls)
        note = notes + "".join(f"I cannot call {code(name)}: it is not among my tools.\n\n" for name in missing)
        return Reply(
            reasoning=f"The user asked for {names}; it is available, so I call it.",
            text=note,
            calls=tuple(calls),
            prompt_text=prompt_text,
        )
    listed = ", ".join(code(name) for name in missing)
    return Reply(
        reasoning=f"The user asked for {listed}, which I was not given.",
        text=f"I cannot call {listed}: it is not among my tools right now.\n\n{_tool_list(tools)}",
        prompt_text=prompt_text,
    )


def _arguments_for(function: dict[str, Any], argument: str) -> str | None:
    """The words after "on"/"with" as the tool's arguments (or the JSON given there): the first
    required string parameter takes the words up to ` with `, the next the words after it, and so
    on (`use write_file on notes.txt with hello`); a tool without required string parameters gets
    them all in its first string parameter. None when a required string parameter is left out."""
    if argument.startswith("{"):
        try:
            parsed = loads(argument)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return json.dumps(parsed, ensure_ascii=False)
    properties, required = _string_parameters(function)
    if not required:
        return json.dumps({properties[0]: _unquoted(argument)}, ensure_ascii=False) if properties and argument else "{}"
    if not argument:
        values = []
    elif len(required) == 1:  # whole: re.split's maxsplit 0 would split at every `with`
        values = [argument]
    else:
        values = _WITH.split(argument, maxsplit=len(required) - 1)
    if len(values) < len(required) or not all(value.strip() for value in values):
        return None
    return json.dumps(dict(zip(required, map(_unquoted, values))), ensure_ascii=False)


def _string_parameters(function: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The tool's string parameters, required ones first, and the required ones."""
    schema = function.get("parameters") or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    strings = [name for name in properties if (properties[name] or {}).get("type", "string") == "string"]
    required = [name for name in schema.get("required") or [] if name in strings]
    return required + [name for name in strings if name not in required], required


def _unquoted(value: str) -> str:
    return value.strip().strip("`'\"")


def _call_form(name: str, function: dict[str, Any]) -> str:
    """How to ask for `name` with every required string parameter: `use write_file on PATH with
    CONTENT`."""
    _strings, required = _string_parameters(function)
    return " with ".join([f"use {name} on {required[0].upper()}", *(part.upper() for part in required[1:])])


def _summarise_results(conversation: list[dict[str, Any]], prompt_text: str) -> Reply:
    results: list[dict[str, Any]] = []
    for message in reversed(conversation):
        if message.get("role") != "tool":
            break
        results.append(message)
    results.reverse()
    names = _call_names(conversation)
    parts = []
    for result in results:
        name = names.get(result.get("tool_call_id"), "tool")
        content = _text_of(result)
        lines = content.splitlines()
        shown = "\n".join(lines[:_SUMMARY_LINES])
        more = len(lines) - _SUMMARY_LINES
        tail = f"\n… and {more} more lines." if more > 0 else ""
        parts.append(
            f"**{code(name)}** returned {len(content)} characters:\n\n{_fenced(shown)}{tail}"
        )
    return Reply(
        reasoning="Summarise what the tools returned.",
        text="\n\n".join(parts) if parts else "The tool returned nothing.",
        prompt_text=prompt_text,
    )


def _call_names(conversation: list[dict[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in conversation:
        for call in message.get("tool_calls") or []:
            names[call.get("id")] = (call.get("function") or {}).get("name", "tool")
    return names


def _greeting(tools: _Tools) -> str:
    return (
        "This is the **offline demo model**: it runs locally, needs no key, and answers "
        "deterministically.\n\nAsk me to `use TOOL on ARGUMENT` and I will call it; a tool that "
        "takes more gets the rest after `with`: `use write_file on notes.txt with hello`.\n\n"
        + _tool_list(tools)
    )


def _tool_list(tools: _Tools) -> str:
    if not tools.available:
        return "I have no tools right now."
    lines = [
        f"- {code(name)} — {code_spanned(str(tools.declared[name].get('description', '')))}".rstrip(" —")
        for name in tools.available
    ]
    return "Tools I can call:\n\n" + "\n".join(lines)


def _fenced(text: str) -> str:
    """`text` as a code block whose fence no backtick run inside it can close."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}text\n{text}\n{fence}"


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def code(text: str) -> str:
    """`text` as one Markdown code span, whatever backticks it holds (CommonMark's longer fence)."""
    fence = "`" * (_longest_backtick_run(text) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def code_spanned(text: str) -> str:
    """Prose with its names and paths code-spanned, so `__pycache__` or `*.py` reads literally
    instead of turning bold or italic (and the plain text of `toolscope run` reads as a person
    would write it). Code spans already there are kept."""
    pieces = []
    position = 0
    for span in _CODE_SPAN.finditer(text):
        pieces.append(_WORD.sub(_code_word, text[position : span.start()]))
        pieces.append(span.group())
        position = span.end()
    pieces.append(_WORD.sub(_code_word, text[position:]))
    return "".join(pieces)


def _code_word(match: re.Match[str]) -> str:
    word = match.group()
    stem = word.rstrip(".")
    if any(char in stem for char in "_*/") and any(char.isalnum() for char in stem):
        return code(stem) + word[len(stem) :]
    return word


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""
