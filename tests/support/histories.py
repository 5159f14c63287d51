"""Hypothesis strategies for valid session event logs whose tools and prompt keep changing.

`session_logs()` draws a whole log (docs/architecture.md §4): turns of a user message and one or more steps;
each step is a model request answered by an assistant message (tool calls, then their results, or
a final answer), sometimes a failed request and its retry first. Before every request the tool
registry and the system prompt may change — a new tool (some ask `deferLoading`), a removal, a
restoration with the same definition, a restoration or an in-place change with a different one
(which rebuilds the declarations), a reordering, an edited prompt, a route switch — and between
turns the user may start a new sequence (`/new-sequence`) or compact.

Every `request/header` and `developer/message` is appended by `LogBuilder.header_for`, i.e. by the
loop's real rules in `app.session.headers` (docs/architecture.md §7), so a drawn log is valid by construction and
its tool history is whatever the reducer makes of it. Calls to a tool that is not current answer
`UNKNOWN_TOOL`, as the loop does.

    from tests.support.histories import session_logs

    @given(session_logs())
    def test_something(log):
        view = log.view()          # the SessionView every consumer reads
        for request in view.requests: ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from app.session.events import (
    Envelope,
    SessionHeader,
    ToolCallData,
    ToolDefinition,
    ToolError,
    ToolResultData,
    encode_event,
    encode_header,
)
from app.session.view import SessionView
from tests.support.builder import LogBuilder, tool

TOOL_NAMES = ("read", "grep", "time", "write", "fetch", "shell")
"""Few names on purpose: removed tools come back often, so restorations are common."""

ROUTES = ("offline/demo", "deepseek/deepseek-flash", "anthropic/claude-sonnet")
BASE_PROMPT = "You are a careful assistant."


@dataclass(frozen=True)
class GeneratedLog:
    """A drawn session: its header line and its events in order."""

    header: SessionHeader
    events: tuple[Envelope, ...]

    def view(self) -> SessionView:
        view = SessionView(self.header)
        for event in self.events:
            view.apply(event)
        return view

    def jsonl(self) -> bytes:
        """The file a writer would have produced."""
        return encode_header(self.header) + b"".join(encode_event(e) for e in self.events)


@dataclass
class _Registry:
    """The effective tools in registry order, and the last definition each name ever had."""

    tools: list[ToolDefinition] = field(default_factory=list)
    known: dict[str, ToolDefinition] = field(default_factory=dict)
    revisions: int = 0

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def register(self, definition: ToolDefinition, index: int) -> None:
        self.tools.insert(min(index, len(self.tools)), definition)
        self.known[definition.name] = definition

    def replace(self, definition: ToolDefinition) -> None:
        self.tools = [definition if t.name == definition.name else t for t in self.tools]
        self.known[definition.name] = definition

    def remove(self, name: str) -> None:
        self.tools = [t for t in self.tools if t.name != name]

    def changed(self, definition: ToolDefinition, toggle_deferral: bool) -> ToolDefinition:
        """A different definition under the same name: a new description, or deferral toggled."""
        if toggle_deferral:
            return definition.model_copy(
                update={"defer_loading": None if definition.defer_loading else True}
            )
        self.revisions += 1
        return definition.model_copy(
            update={"description": f"The {definition.name} tool, revision {self.revisions}."}
        )


def _new_tool(draw: st.DrawFn, name: str) -> ToolDefinition:
    deferred = draw(st.sampled_from((False, False, False, True)))
    return tool(name, defer=deferred, path={"type": "string"})


def _change_registry(draw: st.DrawFn, registry: _Registry) -> None:
    """Zero to three registry changes, as plugins and MCP servers make between two requests."""
    kinds = draw(
        st.lists(
            st.sampled_from(("add", "add", "remove", "remove", "redefine", "reorder")), max_size=3
        )
    )
    for kind in kinds:
        current = registry.names
        absent = [name for name in TOOL_NAMES if name not in current]
        if kind == "add" and absent:
            name = draw(st.sampled_from(absent))
            if name in registry.known:
                restoration = draw(st.sampled_from(("unchanged", "unchanged", "changed")))
                definition = registry.known[name]
                if restoration == "changed":
                    definition = registry.changed(definition, draw(st.booleans()))
            else:
                definition = _new_tool(draw, name)
            registry.register(definition, draw(st.integers(0, len(current))))
        elif kind == "remove" and current:
            registry.remove(draw(st.sampled_from(current)))
        elif kind == "redefine" and current:
            name = draw(st.sampled_from(current))
            registry.replace(registry.changed(registry.known[name], draw(st.booleans())))
        elif kind == "reorder" and len(current) > 1:
            moved = registry.tools.pop(draw(st.integers(0, len(current) - 1)))
            registry.tools.insert(draw(st.integers(0, len(current) - 1)), moved)


def _change_prompt(draw: st.DrawFn, system: str) -> str:
    edit = draw(st.sampled_from(("keep", "keep", "keep", "append", "reset")))
    if edit == "append":
        return f"{system} Rule {draw(st.integers(1, 99))}."
    if edit == "reset":
        return BASE_PROMPT
    return system


class _Session:
    """Drives a `LogBuilder` through turns while a drawn registry and prompt change under it."""

    def __init__(self, draw: st.DrawFn, log: LogBuilder, registry: _Registry) -> None:
        self.draw = draw
        self.log = log
        self.registry = registry
        self.system = BASE_PROMPT
        self.route = ROUTES[0]
        self.new_sequence = False
        self.calls = 0

    def prepare_request(self) -> None:
        """What the loop does before a model call: assemble the header, append what changed."""
        draw = self.draw
        _change_registry(draw, self.registry)
        self.system = _change_prompt(draw, self.system)
        if draw(st.sampled_from((False,) * 9 + (True,))):
            self.route = draw(st.sampled_from(ROUTES))
        self.log.header_for(
            list(self.registry.tools),
            system=self.system,
            route=self.route,
            new_sequence=self.new_sequence,
        )
        self.new_sequence = False

    def between_turns(self) -> None:
        action = self.draw(st.sampled_from(("none",) * 6 + ("new-sequence", "compact")))
        if action == "compact":
            self.log.compaction(f"summary up to seq {self.log.next_seq - 1}")
        self.new_sequence = action != "none"

    def turn(self, number: int, max_steps: int) -> None:
        draw, log = self.draw, self.log
        log.start_turn(f"request {number}")
        steps = draw(st.integers(1, max_steps))
        for step in range(1, steps + 1):
            log.start_step()
            self.prepare_request()
            if draw(st.sampled_from((False,) * 5 + (True,))):
                log.request_error()
                log.retry(1)
                self.prepare_request()
            if step == steps:
                log.assistant(f"answer {number}")
            else:
                self._tool_calls()
            log.end_step()
        log.end_turn()

    def _tool_calls(self) -> None:
        """One to two calls, sometimes to a tool that is gone (a model may still try)."""
        draw, log = self.draw, self.log
        candidates = self.registry.names or list(TOOL_NAMES)
        names = draw(
            st.lists(
                st.one_of(st.sampled_from(candidates), st.sampled_from(TOOL_NAMES)),
                min_size=1,
                max_size=2,
            )
        )
        calls = []
        for name in names:
            self.calls += 1
            calls.append((f"call-{self.calls}", name, '{"path": "README.md"}'))
        log.assistant("", calls=calls)
        for call_id, name, arguments in calls:
            self._run(call_id, name, arguments)

    def _run(self, call_id: str, name: str, arguments: str) -> None:
        log = self.log
        turn, step = log.turn_number, log.step_number
        log.emit(
            "tool/call",
            ToolCallData(turn=turn, step=step, call_id=call_id, name=name, arguments=arguments),
        )
        known = name in self.registry.names
        log.emit(
            "tool/result",
            ToolResultData(
                turn=turn,
                step=step,
                call_id=call_id,
                name=name,
                content=f"{name} ran" if known else f"unknown tool {name}",
                is_error=not known,
                error=None if known else ToolError(code="UNKNOWN_TOOL", message=name),
            ),
        )


@st.composite
def session_logs(draw: st.DrawFn, max_turns: int = 5, max_steps: int = 3) -> GeneratedLog:
    """A valid log of one to `max_turns` turns, each of one to `max_steps` steps."""
    registry = _Registry()
    for name in draw(st.lists(st.sampled_from(TOOL_NAMES), unique=True, max_size=4)):
        registry.register(_new_tool(draw, name), len(registry.tools))
    session = _Session(draw, LogBuilder("generated"), registry)
    turns = draw(st.integers(1, max_turns))
    for number in range(1, turns + 1):
        if number > 1:
            session.between_turns()
        session.turn(number, max_steps)
    return GeneratedLog(header=session.log.header, events=tuple(session.log.events))
