"""One turn without the TUI, on the same session log the chat writes (`toolscope run`,
`app.commands.run`).

stdout gets the answer as it streams (or, with `--json`, every appended event as one JSON line);
stderr gets tool-change notices as they happen, worded exactly as the chat words them, tool-call
progress and problems. The session id is always reported: on stderr at the end and on Ctrl+C, and
as the first line (the log's header) with `--json`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from app.agent.loop import Agent, AgentListener
from app.agent.notices import instructions_notice, tool_change_notice
from app.agent.runtime import (
    build_registry,
    compaction_settings,
    latest_session,
    open_session,
    system_prompt,
)
from app.config import Config
from app.i18n import _
from app.llm.routes import RouteCatalog
from app.llm.stream import BlockDelta, BlockStart, StreamEvent
from app.session.events import (
    DeveloperMessage,
    Envelope,
    Failure,
    InstructionsUpdate,
    RequestError,
    Retry,
    SessionHeader,
    ToolCall,
    ToolResult,
    encode_header,
)
from app.session.store import SessionStore
from app.terminal import PrintableStream, json_text, write_line
from app.tools.approval import AutoApprover
from app.tools.source_state import ServerState, SourceProblem, connected_line


class HeadlessListener(AgentListener):
    def __init__(self, *, json_events: bool, out: TextIO, err: TextIO) -> None:
        self._json = json_events
        self._out = out
        self._err = err
        self._text_blocks: set[int] = set()
        self._wrote_text = False
        self._printer = PrintableStream()
        self._session_id: str | None = None

    def event_appended(self, event: Envelope) -> None:
        if self._json:
            self._out.write(json_text(event.to_json()) + "\n")
            self._out.flush()
        if isinstance(event, DeveloperMessage):
            self._end_text_line()
            if isinstance(event.data, InstructionsUpdate):
                self.note(instructions_notice())
            else:
                for line in tool_change_notice(event.data).lines():
                    self.note(line)
        elif isinstance(event, ToolCall):
            self._end_text_line()
            self.note(_("→ {name} {arguments}").format(name=event.data.name, arguments=event.data.arguments))
        elif isinstance(event, RequestError):
            # A failed attempt's streamed text is not the answer: a retry starts on a new line.
            self._end_text_line()
            self.note(
                _("✗ {code}: {message}").format(
                    code=event.data.failure.code, message=event.data.failure.message
                )
            )
        elif isinstance(event, Retry):
            self.note(
                _("retrying in {delay:.1f} s ({retry} of {max_retries})").format(
                    delay=event.data.delay_ms / 1000,
                    retry=event.data.retry,
                    max_retries=event.data.max_retries,
                )
            )
        elif isinstance(event, ToolResult) and event.data.is_error:
            self.note(
                _("✗ {name}: {message}").format(
                    name=event.data.name,
                    message=event.data.error.message if event.data.error else event.data.content,
                )
            )

    def stream_event(self, event: StreamEvent) -> None:
        if self._json:
            return
        if isinstance(event, BlockStart):
            if event.kind == "text":
                self._text_blocks.add(event.index)
        elif isinstance(event, BlockDelta) and event.index in self._text_blocks:
            shown = self._printer.feed(event.text)
            self._out.write(shown)
            self._out.flush()
            self._wrote_text = bool(shown) or self._wrote_text

    def session_opened(self, header: SessionHeader) -> None:
        """Remember the id to report; with `--json` the header line comes first, so a script
        learns the id before the turn's events."""
        self._session_id = header.id
        if self._json:
            self._out.write(encode_header(header).decode())
            self._out.flush()

    def report_session(self) -> None:
        """The id to continue with (`--session ID`), at the end of the turn and on Ctrl+C."""
        if self._session_id is not None:
            self.note(_("Session: {id}").format(id=self._session_id))

    def problem(self, problem: SourceProblem) -> None:
        self.note(problem.message())

    def finish(self) -> None:
        self._end_text_line()

    def _end_text_line(self) -> None:
        self._printer.reset()
        if self._wrote_text:
            self._out.write("\n")
            self._out.flush()
            self._wrote_text = False
        self._text_blocks.clear()

    def note(self, line: str) -> None:
        """One line to stderr; tool arguments and provider messages in it are shown literally and
        cannot start a line of their own."""
        write_line(self._err, line)


async def run_turn(
    prompt: str,
    *,
    config: Config | None,
    catalog: RouteCatalog,
    route_id: str,
    session: str | None,
    continue_latest: bool,
    approve: bool,
    listener: HeadlessListener,
) -> Failure | None:
    """One turn of `prompt` on `route_id`, in the session `session` (an id or a file), the one
    written to last (`continue_latest`) or a new one; its failure, or None when it completed."""
    cwd = Path.cwd()
    store = SessionStore()
    with open_session(store, latest_session(store.directory) if continue_latest else session, cwd) as writer:
        listener.session_opened(writer.header)
        if writer.torn_path is not None:
            listener.note(
                _(
                    "The last line of the session was incomplete (left by a crash); "
                    "it was set aside in {path}."
                ).format(path=writer.torn_path)
            )
        if writer.repaired:
            listener.note(_("The previous turn was left open by a crash; it is now closed as interrupted."))
        registry = build_registry(config, cwd)
        for source_problem in registry.problems():
            listener.problem(source_problem)
        registry.on_problem(listener.problem)
        async with registry:
            for status in registry.mcp_servers():
                if status.state is ServerState.RUNNING:
                    listener.note(connected_line(status))
            agent = Agent(
                writer,
                registry,
                catalog,
                route_id,
                approver=AutoApprover(approve),
                system=system_prompt(cwd),
                listener=listener,
                compaction=compaction_settings(config),
            )
            try:
                result = await agent.run_turn(prompt)
            finally:
                await agent.aclose()
        listener.finish()
        listener.report_session()
    return result.failure
