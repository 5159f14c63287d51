"""The Trajectory screen: a session as a lazy tree or a flat list, with filters, search, jumps and a
detail pane; over the chat it follows the live session.

A file is read lazily from its line index in worker threads (a loading line shows meanwhile, with
the index scan's progress when the file has no index yet; the title shows the classification,
search and validation going on behind the trajectory); over the chat the live view is followed
through `TrajectoryModel`. Keys are in `app.ui.keymap`; the Footer lists them.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, SelectionList, Static, Tree
from textual.widgets.selection_list import Selection

from app.display import human_size
from app.i18n import N_, _, ngettext
from app.session.errors import SessionError
from app.session.events import Envelope
from app.report.cache import CacheDiagnostic
from app.session.view import ModelRequest, SessionView
from app.terminal import printable_line
from app.trajectory.cache_marks import CacheMarks, Diagnoses, cache_breaks, is_break
from app.trajectory.entries import KINDS, PRESETS, Entry, breaks_matter, preset_named, step_from
from app.trajectory.indexed import Trajectory, classification_matters
from app.trajectory.model import TrajectoryModel
from app.trajectory.source import TrajectorySource
from app.ui import keymap
from app.ui.contract import session_host
from app.ui.footer import LocalizedFooter
from app.ui.screens.inspector import InspectorScreen
from app.ui.screens.modal import ClosableModal
from app.ui.screens.session_picker import SessionPickerScreen
from app.ui.text import literal
from app.ui.trajectory.detail import TrajectoryDetail
from app.ui.trajectory.flat_list import TrajectoryList
from app.ui.trajectory.tree import NodeData, TrajectoryTree, entry_of


DETAIL_DELAY = 0.15
"""Seconds the cursor rests before the JSON pane shows its event."""
MARKS_DELAY = 0.15
"""Seconds the rows rest before the cache marks they want are worked out: a worker thread shares
the interpreter, and keys held down (Page Down) should not wait for it."""


class TrajectoryScreen(Screen[None]):
    CSS_PATH = "screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(keymap.TRAJECTORY_CLOSE, "close", N_("Back")),
        Binding(keymap.TRAJECTORY_LIST, "toggle_list", N_("List/tree")),
        Binding(keymap.TRAJECTORY_PRESET, "next_preset", N_("Filter")),
        Binding(keymap.TRAJECTORY_KINDS, "choose_kinds", N_("Kinds")),
        Binding(keymap.TRAJECTORY_SEARCH, "search", N_("Search")),
        Binding(keymap.TRAJECTORY_SEARCH_NEXT, "search_next(1)", N_("Next match"), show=False),
        Binding(keymap.TRAJECTORY_SEARCH_PREVIOUS, "search_next(-1)", N_("Previous match"), show=False),
        Binding(keymap.TRAJECTORY_NEXT_REQUEST, "jump('request', 1)", N_("Request")),
        Binding(keymap.TRAJECTORY_PREVIOUS_REQUEST, "jump('request', -1)", N_("Previous request"), show=False),
        Binding(keymap.TRAJECTORY_NEXT_CONTEXT, "jump('context', 1)", N_("Context")),
        Binding(keymap.TRAJECTORY_PREVIOUS_CONTEXT, "jump('context', -1)", N_("Previous context"), show=False),
        Binding(keymap.TRAJECTORY_NEXT_ERROR, "jump('error', 1)", N_("Error")),
        Binding(keymap.TRAJECTORY_PREVIOUS_ERROR, "jump('error', -1)", N_("Previous error"), show=False),
        Binding(keymap.TRAJECTORY_DETAIL, "toggle_detail", N_("Detail")),
        Binding(keymap.TRAJECTORY_INSPECT, "inspect", N_("Inspect")),
    ]

    @dataclass
    class RequestSelected(Message):
        """The cursor is on an event of a model request (the inspector shows that request)."""

        request: ModelRequest

    def __init__(self, source: TrajectorySource) -> None:
        super().__init__()
        self.source = source
        self.model: Trajectory = TrajectoryModel()
        self.kinds = PRESETS[0].kinds
        self.flat = False
        self.loaded = False
        self._matches: list[int] = []  # seqs
        self._query = ""
        self._match_note = ""
        self._search_note = ""
        self._classify_note = ""
        self._breaks_note = ""
        self._breaks_for: Trajectory | None = None  # the model whose cache breaks a pass is finding
        self._marking = False  # a worker is working out the diagnostics of rows drawn without them
        self._marks_timer: Timer | None = None
        self._diagnoses: Diagnoses | None = None  # the worker's, over a session of its own
        self._validation_note = ""
        self._searches = 0  # the search under way is the latest while this is its number
        self._detail_timer: Timer | None = None
        self._tree = TrajectoryTree(self.model, self.kinds, id="trajectory-tree")
        self._list = TrajectoryList(self.model, self.kinds, id="trajectory-list")

    def compose(self) -> ComposeResult:
        yield Static(id="trajectory-title")
        with Horizontal(id="trajectory-body"):
            with Vertical(id="trajectory-main"):
                yield Static(id="trajectory-loading")
                yield self._tree
                yield self._list
            yield TrajectoryDetail(id="trajectory-detail")
        yield Input(placeholder=_("Search the whole session; Enter finds, Esc closes"), id="trajectory-search")
        yield LocalizedFooter()

    def on_mount(self) -> None:
        self._tree.display = False
        self._list.display = False
        self.query_one("#trajectory-search").display = False
        try:
            size = self.source.size
        except OSError:
            size = 0
        reading = _("Reading the session ({size})…").format(size=human_size(size)) if size else _("Reading the session…")
        self.query_one("#trajectory-loading", Static).update(literal(reading))
        self._show_title()
        self._load()

    # --- loading and following -----------------------------------------------------------------------

    @work(group="trajectory-load", exclusive=True)
    async def _load(self) -> None:
        """Read the view and build its rows in a thread (a file), or at once (the chat's live view);
        a file is then validated in the background while it is browsed."""
        source = self.source
        try:
            if source.live:
                model: Trajectory = self._model_of(source.load())
            else:
                size = human_size(source.size)
                model = await asyncio.to_thread(source.trajectory, self._reporter(self._show_indexing, size))
        except (SessionError, OSError) as error:
            self._failed(str(error))
            return
        self.loaded = True
        self.query_one("#trajectory-loading").display = False
        self._show_model(model)
        if source.live:
            signal = session_host(self.app).session_advanced
            if signal is not None:
                signal.subscribe(self, self._advanced)
            return
        # Behind the first frame with rows, not before it: the threads share the interpreter.
        self.call_after_refresh(self._start_background, model)

    def _start_background(self, model: Trajectory) -> None:
        if not model.classified:
            self._classify(model)
        self._validate()

    def _reporter(self, show: Callable[..., None], *details: object) -> Callable[[int, int], None]:
        """A progress callback for a worker thread: `show(percent, *details)` on the UI thread, once
        per percent."""
        last = -1

        def progress(done: int, total: int) -> None:
            nonlocal last
            percent = done * 100 // total if total else 100
            if percent != last:
                last = percent
                self.app.call_from_thread(show, percent, *details)

        return progress

    def _show_indexing(self, percent: int, size: str) -> None:
        self.query_one("#trajectory-loading", Static).update(
            literal(_("Indexing the session ({size}): {percent}%").format(size=size, percent=percent)), layout=False
        )

    @work(group="trajectory-classify", exclusive=True, thread=True)
    def _classify(self, model: Trajectory) -> None:
        """The failed tool results and the new projection sequences, found behind the trajectory
        (a type code does not tell them); the filters that need them are applied again after."""
        try:
            model.classify_elsewhere(self._reporter(self._show_classifying))
        except (SessionError, OSError):
            pass  # the file changed or went away: the validation behind it says so
        self.app.call_from_thread(self._classified, model)

    def _show_classifying(self, percent: int) -> None:
        self._classify_note = _("finding errors and sequences {percent}%").format(percent=percent)
        self._show_title()

    def _classified(self, model: Trajectory) -> None:
        self._classify_note = ""
        if model is self.model and classification_matters(self.kinds):
            self.set_kinds(self.kinds)
        self._show_title()

    @work(group="trajectory-validate", exclusive=True, thread=True)
    def _validate(self) -> None:
        """Strict validation of every line goes on behind the trajectory; the title shows how far
        it got, and a corruption it finds is said with its file and line, keeping what is shown."""
        try:
            self.source.validate(self._reporter(self._show_validating))
        except (SessionError, OSError) as error:
            self.app.call_from_thread(self._invalid, str(error))
            return
        self.app.call_from_thread(self._show_validation, "")

    def _show_validating(self, percent: int) -> None:
        self._show_validation(_("validating {percent}%").format(percent=percent))

    def _show_validation(self, note: str) -> None:
        self._validation_note = note
        self._show_title()

    def _invalid(self, reason: str) -> None:
        self._show_validation(_("corrupt: {reason}").format(reason=printable_line(reason)))
        self.notify(
            printable_line(reason), title=_("The session is corrupt past what is shown"), severity="error", timeout=15
        )

    @staticmethod
    def _model_of(view: SessionView | None) -> TrajectoryModel:
        model = TrajectoryModel()
        if view is not None:
            model.update(view)
        return model

    def _failed(self, reason: str) -> None:
        loading = self.query_one("#trajectory-loading", Static)
        loading.add_class("-error")
        loading.update(literal(_("Cannot open the session: {reason}").format(reason=printable_line(reason))))
        self.notify(printable_line(reason), title=_("Cannot open the session"), severity="error", timeout=10)

    def _show_view(self, view: SessionView | None) -> None:
        """Everything from scratch: a session the chat replaced."""
        self._show_model(self._model_of(view))

    def _show_model(self, model: Trajectory) -> None:
        if model.view is not None:
            model.cache_marks = CacheMarks(self._marks_wanted)
        self._diagnoses = None
        self.model = model
        self._tree.model = model
        self._tree.words = ()
        self._list.show_model(model)
        self._matches, self._query, self._match_note = [], "", ""
        self._tree.rebuild(self.kinds)
        self._list.rebuild(self.kinds)
        self._show_mode()
        self._tree.show_latest_turn()
        self._show_title()

    def _advanced(self, event: Envelope | None) -> None:
        view = self.source.load()
        model = self.model
        if event is None or view is None or not isinstance(model, TrajectoryModel) or view is not model.view:
            self._show_view(view)
            return
        new = model.update(view)
        if model.breaks_found and model.cache_marks is not None:
            for entry in new:
                model.cache_marks.broken(entry)  # wanted: marked when worked out (`_marks_worked_out`)
        self._tree.add_entries(new)
        self._list.add_entries(new)
        self._show_title()

    # --- what is shown -------------------------------------------------------------------------------

    @property
    def _main(self) -> TrajectoryTree | TrajectoryList:
        return self._list if self.flat else self._tree

    def _show_mode(self) -> None:
        self._tree.display = not self.flat
        self._list.display = self.flat
        self._main.focus()
        self._show_detail(self.current_entry)

    def _show_title(self) -> None:
        preset = preset_named(self.kinds)
        filter_name = _(preset.name) if preset is not None else _("custom")
        events = self.model.last_seq + 1
        parts = [
            _("Trajectory {session}").format(session=printable_line(self.source.session_id)),
            ngettext("{n} event", "{n} events", events).format(n=f"{events:,}"),  # 1,000,201 reads at a glance
            _("filter: {name}").format(name=filter_name),
            _("list") if self.flat else _("tree"),
        ]
        if self._match_note:
            parts.append(self._match_note)
        for note in (self._search_note, self._classify_note, self._breaks_note):
            if note:
                parts.append(note)
        if self._validation_note:
            parts.append(self._validation_note)
        # One line of a fixed height: no layout (progress notes change it a few times a second). A
        # worker's note may land after the screen's widgets are gone (the app closing): none then.
        for title in self.query("#trajectory-title").results(Static):
            title.update(literal(" · ".join(parts)), layout=False)

    @property
    def current_entry(self) -> Entry | None:
        return self._main.cursor_entry

    @property
    def selected_request(self) -> ModelRequest | None:
        entry = self.current_entry
        return entry.request if entry is not None else None

    def _show_detail(self, entry: Entry | None) -> None:
        """The JSON pane follows the cursor once it rests: highlighting an event's JSON costs more
        than moving the cursor, and a held arrow key should not wait for each one."""
        if self._detail_timer is not None:
            self._detail_timer.stop()
        self._detail_timer = self.set_timer(DETAIL_DELAY, lambda: self._show_detail_now(entry))
        if entry is not None and entry.request is not None:
            self.post_message(self.RequestSelected(entry.request))

    def _show_detail_now(self, entry: Entry | None) -> None:
        marks = self.model.cache_marks
        broken = marks.broken(entry) if marks is not None and entry is not None else None
        self.query_one(TrajectoryDetail).show(entry, broken)

    @on(Tree.NodeHighlighted, "#trajectory-tree")
    def _tree_highlighted(self, event: Tree.NodeHighlighted[NodeData]) -> None:
        self._show_detail(entry_of(event.node.data))

    @on(TrajectoryList.Highlighted)
    def _list_highlighted(self, event: TrajectoryList.Highlighted) -> None:
        self._show_detail(event.entry)

    def go_to(self, entry: Entry) -> bool:
        """Put the cursor on `entry` in the current mode (expanding the tree's way to it)."""
        return self._list.move_to(entry) if self.flat else self._tree.reveal(entry)

    # --- actions -------------------------------------------------------------------------------------

    def action_close(self) -> None:
        search = self.query_one("#trajectory-search", Input)
        if search.display:
            search.display = False
            self._main.focus()
            return
        self.dismiss(None)

    def action_toggle_list(self) -> None:
        entry = self.current_entry
        self.flat = not self.flat
        if entry is not None:
            self.go_to(entry)
        self._show_mode()
        self._show_title()

    def action_toggle_detail(self) -> None:
        detail = self.query_one(TrajectoryDetail)
        detail.display = not detail.display

    def action_inspect(self) -> None:
        """The inspector on the request under the cursor (the latest when the cursor is on none), of
        the session the app shows (this one); over the chat it follows the session as it is logged,
        as the chat's own inspector does."""
        if not self.loaded:
            return
        request = self.selected_request
        self.app.push_screen(InspectorScreen(request=request.index if request is not None else None, follow_latest=False))

    def action_next_preset(self) -> None:
        names = [preset.kinds for preset in PRESETS]
        index = names.index(self.kinds) + 1 if self.kinds in names else 0
        self.set_kinds(PRESETS[index % len(PRESETS)].kinds)

    def action_choose_kinds(self) -> None:
        def chosen(kinds: frozenset[str] | None) -> None:
            if kinds is not None:
                self.set_kinds(kinds)

        self.app.push_screen(KindsScreen(self.kinds), chosen)

    def set_kinds(self, kinds: frozenset[str]) -> None:
        entry = self.current_entry
        tree = self._tree
        expanded, row = tree.expanded_entries(), tree.cursor_line - round(tree.scroll_offset.y)
        self.kinds = kinds
        tree.rebuild(kinds)
        tree.expand_entries(expanded)
        self._list.rebuild(kinds)
        if entry is not None and not self.go_to(entry):
            nearest = self.model.nearest(entry.seq, kinds)
            if nearest is not None:
                self.go_to(nearest)
        if not self.flat:
            # The cursor's row where it was on the screen, and with it what was around it.
            tree.scroll_to(y=max(tree.cursor_line - row, 0), animate=False, immediate=True)
        if self._query:
            self._search(self._query)
        if breaks_matter(kinds) and not self.model.breaks_found and self._breaks_for is not self.model and self.loaded:
            self._find_breaks(self.model)
        self._show_detail(self.current_entry)
        self._show_title()

    # --- cache-break marks (app.trajectory.cache_marks) ----------------------------------------------

    def _marks_wanted(self) -> None:
        """Rows were drawn before their requests' diagnostics were known: work them out behind,
        once the rows rest."""
        if self._marking:
            return  # asked again when it is done
        if self._marks_timer is not None:
            self._marks_timer.stop()
        self._marks_timer = self.set_timer(MARKS_DELAY, lambda: self._work_out_marks(self.model))

    def _work_out_marks(self, model: Trajectory) -> None:
        self._marking = True
        marks = model.cache_marks
        wanted = marks.take_wanted() if marks is not None and model is self.model else []
        if not wanted or model.view is None:
            self._marking = False
            return
        path = model.view.chain.path  # type: ignore[attr-defined]  # an IndexedView
        routes = list(session_host(self.app).catalog)

        def work() -> None:
            from app.session.session import Session

            try:
                diagnoses = self._diagnoses
                if diagnoses is None or len(diagnoses) < wanted[-1]:  # a live session has grown
                    diagnoses = self._diagnoses = Diagnoses(Session.open(path).view().requests, routes)
                found = {index: diagnoses.of(index) for index in wanted if index <= len(diagnoses)}
            except (SessionError, OSError):
                found = {}  # the file changed or went away: the validation behind it says so
            self.app.call_from_thread(self._marks_worked_out, model, found)

        self.run_worker(work, group="trajectory-marks", thread=True)

    def _marks_worked_out(self, model: Trajectory, found: dict[int, tuple[int, CacheDiagnostic | None]]) -> None:
        """Draw the rows of the breaks found again; mark them for the filter when its pass has run
        (requests logged since); then work out the rows wanted meanwhile."""
        self._marking = False
        marks = model.cache_marks
        if marks is None or model is not self.model:
            return
        marks.know({index: diagnostic for index, (_seq, diagnostic) in found.items()})
        broken = sorted(seq for seq, diagnostic in found.values() if is_break(diagnostic))
        if broken:
            if model.breaks_found:
                model.mark_breaks(broken)
                if breaks_matter(self.kinds):
                    self.set_kinds(self.kinds)
            self._tree.relabel(broken)
            self._list.redraw()
            current = self.current_entry
            if current is not None and current.seq in broken:
                self._show_detail_now(current)
        if marks.waiting:
            self._marks_wanted()

    def _find_breaks(self, model: Trajectory) -> None:
        """Every request's cache diagnostic, in a thread reading the log through a session of its
        own (a lazy view is not shared across threads), the title showing how far it got; then the
        filter shows the requests whose cache broke."""
        if model.view is None:
            return
        path, total = model.view.chain.path, len(model.view.requests)  # type: ignore[attr-defined]  # an IndexedView
        routes = list(session_host(self.app).catalog)
        report = self._reporter(self._show_finding_breaks)
        self._breaks_for = model

        def find() -> None:
            from itertools import islice

            from app.session.session import Session

            try:
                requests = islice(Session.open(path).view().requests, total)
                found = cache_breaks(requests, routes, report, total)
            except (SessionError, OSError) as error:
                self.app.call_from_thread(self._breaks_failed, str(error))
                return
            self.app.call_from_thread(self._breaks_found, model, found, total)

        self.run_worker(find, group="trajectory-breaks", exclusive=True, thread=True)

    def _show_finding_breaks(self, percent: int) -> None:
        self._breaks_note = _("finding cache breaks {percent}%").format(percent=percent)
        self._show_title()

    def _breaks_failed(self, reason: str) -> None:
        self._breaks_note, self._breaks_for = "", None
        self.notify(printable_line(reason), title=_("Finding the cache breaks stopped"), severity="error")
        self._show_title()

    def _breaks_found(self, model: Trajectory, found: dict[int, tuple[int, CacheDiagnostic]], total: int) -> None:
        """Mark what the pass found; the requests logged since it started (a live session) are
        wanted, and marked when worked out."""
        marks = model.cache_marks
        if marks is not None:
            marks.know(dict(found.values()))
            for request in model.view.requests[total:] if model.view is not None else ():
                marks.broken_request(request)
        model.mark_breaks(sorted(found))
        model.breaks_found = True
        self._breaks_note, self._breaks_for = "", None
        if model is self.model and breaks_matter(self.kinds):
            self.set_kinds(self.kinds)
        self._show_title()

    def action_search(self) -> None:
        search = self.query_one("#trajectory-search", Input)
        search.display = True
        # Now, not on the next message: keys typed right after `/` must already reach the input.
        self.set_focus(search)

    @on(Input.Submitted, "#trajectory-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.input.display = False
        self._main.focus()
        self._search(event.value, jump=True)

    @work(group="trajectory-search", exclusive=True)
    async def _search(self, query: str, *, jump: bool = False) -> None:
        """Find every shown event whose text has all the words, in a thread (a large session's
        text takes a while to scan; the title shows how far it got), then go to the first hit after
        the cursor. A search started since makes this one stop."""
        self._query = query
        self._searches += 1
        number, model, kinds = self._searches, self.model, self.kinds
        report = self._reporter(self._show_searching)

        def progress(done: int, total: int) -> None:
            if number != self._searches:
                raise _Superseded
            report(done, total)

        try:
            matches = await asyncio.to_thread(model.search, query, kinds, progress)
        except _Superseded:
            return
        except (SessionError, OSError) as error:
            self._search_note = ""
            self.notify(printable_line(str(error)), title=_("The search stopped"), severity="error")
            return
        self._search_note = ""
        if number != self._searches or model is not self.model:
            return
        self._matches = matches
        words = tuple(query.split())
        self._tree.highlight(words)
        self._list.highlight(words)
        if jump:
            self.action_search_next(1)
        else:
            self._show_title()

    def _show_searching(self, percent: int) -> None:
        self._search_note = _("searching {percent}%").format(percent=percent)
        self._show_title()

    def action_search_next(self, direction: int) -> None:
        if not self._query:
            self.action_search()
            return
        target = step_from(self._matches, self._cursor_seq, direction, wrap=True)
        count = len(self._matches)
        entry = self.model.by_seq.get(target) if target is not None else None
        if entry is None:
            self._match_note = _("no match for “{query}”").format(query=printable_line(self._query))
        else:
            self.go_to(entry)
            self._match_note = ngettext(
                "match {index} of {count} for “{query}”", "match {index} of {count} for “{query}”", count
            ).format(index=bisect_left(self._matches, target) + 1, count=count, query=printable_line(self._query))
        self._show_title()

    def action_jump(self, kind: str, direction: int) -> None:
        target = self.model.find(kind, self._cursor_seq, direction, self.kinds)
        if target is None:
            self.notify(_("Nothing further in that direction with this filter."), timeout=3)
            return
        self.go_to(target)

    @property
    def _cursor_seq(self) -> int:
        current = self.current_entry
        return current.seq if current is not None else -1


class _Superseded(Exception):
    """A newer search has started: the older one stops where it is."""


class KindsScreen(ClosableModal[frozenset[str]]):
    """Which kinds of event the trajectory shows: Space or a click toggles, Escape applies."""

    DEFAULT_CSS = """
    KindsScreen { align: center middle; }
    KindsScreen > #kinds-dialog {
        width: 50; height: auto; border: round $accent; background: $surface; padding: 0 1;
    }
    KindsScreen #kinds-title { text-style: bold; color: $text-accent; }
    KindsScreen SelectionList { height: auto; max-height: 16; }
    KindsScreen #kinds-hint { color: $text-muted; }
    """

    def __init__(self, kinds: Iterable[str]) -> None:
        super().__init__()
        self._kinds = frozenset(kinds)

    def compose(self) -> ComposeResult:
        with Vertical(id="kinds-dialog"):
            yield Static(literal(_("Show these events")), id="kinds-title")
            yield SelectionList[str](
                *(Selection(literal(_(label)), kind, kind in self._kinds) for kind, label in KINDS.items()),
                id="kinds",
            )
            yield Static(literal(_("Space or click toggles · Esc applies")), id="kinds-hint")

    def action_close(self) -> None:
        self.dismiss(frozenset(self.query_one(SelectionList).selected))


class TrajectorySessionPicker(SessionPickerScreen):
    """The session picker of `toolscope view`: the same list, choosing a session to browse."""

    def heading(self) -> str:
        return _("Open a session")
