"""One tool call: name, arguments, status (pending → running → done / failed with its code), result.

A long result is collapsed to its first lines; a failed one is expanded. Click or Enter toggles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from app.i18n import N_, _
from app.session.view_items import stored_part
from app.ui.text import clip_lines, literal
from app.ui.widgets.conversation.block import Block, ExpandsOnClick, expand_hint

if TYPE_CHECKING:
    from app.session import structs
    from app.session.view_items import ToolResultItem

COLLAPSED_LINES = 6
ARGUMENT_CHARS = 200

PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"


class ToolCallView(ExpandsOnClick, Vertical, can_focus=True):
    DEFAULT_CSS = """
    ToolCallView {
        height: auto;
        margin: 1 0 0 2;
        padding: 0 1;
        border-left: outer $secondary;
        &:focus { background: $boost; }
        & > Horizontal { height: auto; }
        & > Horizontal > Static { width: auto; }  /* Statics, not Labels: no Label CSS to parse */
        & .name { text-style: bold; color: $secondary; margin-right: 1; }
        & .arguments { color: $text-muted; width: 1fr; }
        & .status { margin-left: 1; }
        & .status.-pending, & .status.-running { color: $warning; }
        & .status.-done { color: $success; }
        & .status.-failed { color: $error; }
        & .result { color: $text; padding-left: 1; }
        &.-failed .result { color: $error; }
        & .more { color: $text-muted; text-style: italic; }
    }
    """
    BINDINGS = [("enter", "toggle", N_("Expand"))]

    def __init__(self, block: ToolCallBlock) -> None:
        super().__init__()
        self.block = block

    def compose(self) -> ComposeResult:
        call = self.block.call
        arguments = call.arguments if len(call.arguments) <= ARGUMENT_CHARS else call.arguments[:ARGUMENT_CHARS] + "…"
        with Horizontal():
            yield Static(literal(call.name), classes="name")
            yield Static(literal(arguments), classes="arguments")
            yield Static("", classes="status")
        yield Static("", classes="result")
        yield Static("", classes="more")

    def on_mount(self) -> None:
        # Nothing composed only when the app quits as this mounts (a chat quit while a resumed
        # conversation is shown): nothing to fill, and raising would end the app with status 1.
        if self.query(".status"):
            self.refresh_from_block()

    def refresh_from_block(self) -> None:
        block = self.block
        status = self.query_one(".status", Static)
        status.set_classes(f"status -{block.status}")
        status.update(literal(block.status_text()))
        self.set_class(block.status == FAILED, "-failed")
        result = self.query_one(".result", Static)
        more = self.query_one(".more", Static)
        if block.result is None:
            result.display = more.display = False
            return
        text = block.result.content
        shown, cut = (text, False) if block.expanded else clip_lines(text, COLLAPSED_LINES)
        result.display = bool(text)
        result.update(literal(shown))
        more.display = cut
        if cut:
            hidden = text.count("\n") + 1 - COLLAPSED_LINES
            more.update(expand_hint(hidden))


class ToolCallBlock(Block):
    def __init__(self, call: structs.ToolCallContent) -> None:
        self.call = call  # msgspec's Struct, live or resumed (`Conversation._call_block`)
        self.started = False
        self.result: ToolResultItem | None = None
        self.expanded = False

    @property
    def status(self) -> str:
        if self.result is not None:
            return FAILED if self.result.is_error else DONE
        return RUNNING if self.started else PENDING

    def status_text(self) -> str:
        status = self.status
        if status == FAILED:
            assert self.result is not None
            error = stored_part(self.result, "error")
            code = error.code if error else "ERROR"
            return _("✗ failed: {code}").format(code=code)
        return {PENDING: _("… pending"), RUNNING: _("⟳ running"), DONE: _("✓ done")}[status]

    def build(self) -> ToolCallView:
        return ToolCallView(self)

    def start(self) -> None:
        self.started = True
        self.refresh_widget()

    def finish(self, result: ToolResultItem) -> None:
        self.result = result
        self.expanded = result.is_error
        self.refresh_widget()
