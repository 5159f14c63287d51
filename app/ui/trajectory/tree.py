"""The trajectory as a lazy tree: turns → steps → requests, messages, context nodes, tool calls with
their results, errors, retries, compactions and sequence boundaries.

Only the top level is built up front; a node's children are built when it is first expanded (or when
a search or a jump needs a node inside it). A session of many turns groups them ("Turns 1–100",
groups of ten groups above that, at most 100 at the top). Labels are single-line `Text` made from
the session view, so measuring one is a `cell_len`, not a render.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from app.i18n import N_, _, ngettext
from app.session.view import Step, Turn
from app.session.view_items import AssistantItem, ContextItem, ToolCallItem
from app.trajectory.entries import Entry, TurnGroup
from app.trajectory.indexed import GROUP_SPAN, IndexedTrajectory, Trajectory
from app.trajectory.labels import answer_label, changed_tool_label, reasoning_label
from app.ui import keymap
from app.ui.text import literal_text
from app.ui.trajectory.labels import entry_label, highlighted, rich_label


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of an entry with a node of its own: a request's reasoning or answer, or one tool of
    a tool change. Selecting it shows its entry."""

    entry: Entry
    label: Text


NodeData = Entry | Part | TurnGroup
EXPANDER_WIDTH = 2
"""`Tree.ICON_NODE` ("▶ ") before the label of a node that expands."""
EXPAND_ALL_ROWS = 2_000
"""Shift+Space shows at most this many rows below the cursor: on a group of a million events it
would otherwise build and lay out every node at once. The rest stays collapsed, ready to expand."""


def entry_of(data: NodeData | None) -> Entry | None:
    if isinstance(data, Part):
        return data.entry
    return data if isinstance(data, Entry) else None


def group_label(group: TurnGroup) -> Text:
    return Text(_("Turns {first}–{last}").format(first=group.first + 1, last=group.stop), style="bold dim")


class TrajectoryTree(Tree[NodeData]):
    DEFAULT_CSS = """
    TrajectoryTree { background: $surface; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(keymap.TRAJECTORY_EXPAND_ALL, "toggle_expand_all", N_("Expand all"), show=False),
    ]

    def __init__(self, model: Trajectory, kinds: frozenset[str], *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.show_root = False
        self.guide_depth = 3
        self.auto_expand = False
        self.model = model
        self.kinds = kinds
        self._by_entry: dict[int, TreeNode[NodeData]] = {}
        self._by_group: dict[TurnGroup, TreeNode[NodeData]] = {}
        self.words: tuple[str, ...] = ()  # the search's, marked in the labels
        self._loaded: set[int] = set()  # ids of nodes whose children are built

    # --- cheap labels ------------------------------------------------------------------------------

    def process_label(self, label: str | Text) -> Text:
        return label if isinstance(label, Text) else literal_text(label)

    def get_label_width(self, node: TreeNode[NodeData]) -> int:
        label: Text = node.label  # type: ignore[assignment]  # `process_label` made it a Text
        return label.cell_len + (EXPANDER_WIDTH if node.allow_expand else 0)

    # --- building ----------------------------------------------------------------------------------

    def rebuild(self, kinds: frozenset[str] | None = None) -> None:
        """Start over from the top level (a new filter, a replaced session)."""
        if kinds is not None:
            self.kinds = kinds
        self.clear()
        self._by_entry.clear()
        self._by_group.clear()
        self._loaded.clear()
        self._loaded.add(self.root.id)
        self._add_all(self.root, self.model.top_level(self.kinds))
        if self.root.children:
            self.move_cursor(self.root.children[0])

    def show_latest_turn(self) -> None:
        """The cursor on the latest turn the filter shows, with it and its steps expanded (its
        requests, context nodes and tool calls in view), as a transcript or `less +G` opens at the
        end; Home goes to the first row. Nothing moves when no turn shows."""
        turn = self.model.latest_turn(self.kinds)
        if turn is None or not self.reveal(turn):
            return
        node = self._by_entry[turn.seq]
        self.load(node)
        node.expand()
        for child in node.children:
            if isinstance(child.data, Entry) and isinstance(child.data.subject, Step):
                self.load(child)
                child.expand()
        self.last_line  # noqa: B018  (lays the lines out now, so the nodes have their lines)
        last = node
        while last.is_expanded and last.children:
            last = last.children[-1]
        # Its end in view, then its start: the start wins when the turn is taller than the view.
        self.scroll_to_line(last.line, animate=False)
        self.scroll_to_node(node, animate=False)

    def expanded_entries(self) -> list[Entry]:
        """The entries whose nodes are expanded, in log order (`expand_entries` opens them again)."""
        return sorted(
            (node.data for node in self._by_entry.values() if node.is_expanded and isinstance(node.data, Entry)),
            key=lambda entry: entry.seq,
        )

    def expand_entries(self, entries: list[Entry]) -> None:
        """Expand the nodes of `entries` the filter still shows, with the way to each: a filter
        applied again (the classification behind a large file's trajectory) leaves open what was."""
        for entry in entries:
            node = self.node_for(entry)
            while node is not None and node is not self.root:
                self.load(node)
                node.expand()
                node = node.parent

    def add_entries(self, entries: list[Entry]) -> None:
        """Entries the live session gained: each goes where it belongs if that place is built;
        otherwise it is built with its parent, on expand."""
        for entry in entries:
            if entry.is_structure:
                continue  # a turn or step appears with its first visible item
            if entry.seq in self._by_entry or not entry.shown(self.kinds):
                continue
            parent = self._ensure_parent(entry)
            if parent is not None and parent.id in self._loaded and entry.seq not in self._by_entry:
                self._add(parent, entry)
            call = self.model.call_of(entry)
            if call is not None and call.seq in self._by_entry:
                self._by_entry[call.seq].allow_expand = True
        for turn_node in self.root.children[-1:]:
            # The open turn's label says how it ended, once it has.
            if isinstance(turn_node.data, Entry) and isinstance(turn_node.data.subject, Turn):
                turn_node.set_label(highlighted(entry_label(turn_node.data), self.words))

    def _visible(self, entry: Entry) -> bool:
        return self.model.visible(entry, self.kinds)

    def _add_all(self, parent: TreeNode[NodeData], things: list[Entry | TurnGroup]) -> None:
        for thing in things:
            if isinstance(thing, TurnGroup):
                self._by_group[thing] = parent.add(group_label(thing), data=thing, allow_expand=True)
            else:
                self._add(parent, thing)

    def highlight(self, words: tuple[str, ...]) -> None:
        """Mark the search's words in every label built, and in those built from now on."""
        self.words = words
        for node in self._by_entry.values():
            if isinstance(node.data, Entry):
                node.set_label(highlighted(entry_label(node.data, self.model.cache_marks), words))

    def relabel(self, seqs: list[int]) -> None:
        """Label again the built nodes of these events (their requests' cache marks are known now)."""
        for seq in seqs:
            node = self._by_entry.get(seq)
            if node is not None and isinstance(node.data, Entry):
                node.set_label(highlighted(entry_label(node.data, self.model.cache_marks), self.words))

    def _add(self, parent: TreeNode[NodeData], entry: Entry) -> TreeNode[NodeData]:
        label = highlighted(entry_label(entry, self.model.cache_marks), self.words)
        node = parent.add(label, data=entry, allow_expand=self._expands(entry))
        self._by_entry[entry.seq] = node
        return node

    def _expands(self, entry: Entry) -> bool:
        subject = entry.subject
        if isinstance(subject, (Turn, Step)):
            return True
        if isinstance(subject, AssistantItem):
            return bool(subject.text or (subject.reasoning and "reasoning" in self.kinds))
        if isinstance(subject, ToolCallItem):
            return self.model.result_of(entry) is not None
        if isinstance(subject, ContextItem):
            return subject.is_tool_change
        return False

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[NodeData]) -> None:
        self.load(event.node)

    def load(self, node: TreeNode[NodeData]) -> None:
        """Build `node`'s children, once."""
        if node.id in self._loaded:
            return
        self._loaded.add(node.id)
        entry = node.data
        if isinstance(entry, TurnGroup):
            self._add_all(node, self.model.group_children(entry, self.kinds))
            return
        if not isinstance(entry, Entry):
            return
        subject = entry.subject
        by_seq = self.model.by_seq
        if isinstance(subject, Turn):
            inside = sorted([*subject.items, *subject.steps], key=lambda thing: thing.seq)
            for thing in inside:
                child = by_seq[thing.seq]
                if self._visible(child):
                    self._add(node, child)
        elif isinstance(subject, Step):
            for item in subject.items:
                child = by_seq[item.seq]
                if child.shown(self.kinds) and not self._under_its_call(child):
                    self._add(node, child)
        elif isinstance(subject, AssistantItem):
            if subject.reasoning and "reasoning" in self.kinds:
                node.add_leaf(rich_label(reasoning_label(subject)), data=Part(entry, rich_label(reasoning_label(subject))))
            if subject.text:
                node.add_leaf(rich_label(answer_label(subject)), data=Part(entry, rich_label(answer_label(subject))))
        elif isinstance(subject, ToolCallItem):
            result = self.model.result_of(entry)
            if result is not None:
                self._add(node, result)
        elif isinstance(subject, ContextItem):
            for tool in self.model.changed_tools(subject):
                label = rich_label(changed_tool_label(tool))
                node.add_leaf(label, data=Part(entry, label))

    def action_toggle_expand_all(self) -> None:
        """Shift+Space: everything below the cursor expanded (children built first), or collapsed."""
        node = self.cursor_node
        if node is None or not node.allow_expand:
            return
        if node.is_expanded:
            self.collapse_below(node)
            return
        rows = self.expand_below(node)
        if rows is not None:
            self.notify(
                ngettext(
                    "Expanded the first {count} row below the cursor; the rest stay collapsed (Space expands one)",
                    "Expanded the first {count} rows below the cursor; the rest stay collapsed (Space expands one)",
                    rows,
                ).format(count=f"{rows:,}")
            )

    def expand_below(self, node: TreeNode[NodeData]) -> int | None:
        """Expand `node` and the nodes below it in reading order while at most `EXPAND_ALL_ROWS` rows
        show under it. None when all are expanded; else the rows shown, the rest left collapsed."""
        shown = 0
        pending = [node]
        while pending:
            current = pending.pop()
            if not current.allow_expand:
                continue
            self.load(current)
            if current is not node and shown + len(current.children) > EXPAND_ALL_ROWS:
                return shown
            shown += len(current.children)
            current.expand()
            pending.extend(reversed(current.children))
        return None

    def collapse_below(self, node: TreeNode[NodeData]) -> None:
        """Collapse `node` and every built node below it, so expanding it again shows one level."""
        pending = [node]
        while pending:
            current = pending.pop()
            if current.is_expanded:
                current.collapse()
            pending.extend(current.children)

    def _under_its_call(self, entry: Entry) -> bool:
        call = self.model.call_of(entry)
        return (
            call is not None
            and call.step is not None
            and entry.step is not None
            and call.step.seq == entry.step.seq
            and call.shown(self.kinds)
        )

    # --- finding -----------------------------------------------------------------------------------

    def _parent_entry(self, entry: Entry) -> Entry | None:
        if isinstance(entry.subject, Turn):
            return None
        if self._under_its_call(entry):
            return self.model.call_of(entry)
        if entry.step is not None and not isinstance(entry.subject, Step):
            return self.model.by_seq[entry.step.seq]
        if entry.turn is not None:
            return self.model.by_seq[entry.turn.seq]
        return None

    def _ensure_parent(self, entry: Entry) -> TreeNode[NodeData] | None:
        """The node `entry` goes under, created (with its ancestors) if they are built."""
        parent_entry = self._parent_entry(entry)
        if parent_entry is None:
            return self.root
        node = self._by_entry.get(parent_entry.seq)
        if node is not None:
            return node
        grandparent = self._ensure_parent(parent_entry)
        if grandparent is None or grandparent.id not in self._loaded:
            return None
        return self._add(grandparent, parent_entry)

    def node_for(self, entry: Entry) -> TreeNode[NodeData] | None:
        """The node of `entry`, building (not expanding) the nodes above it; None when filtered out."""
        node = self._by_entry.get(entry.seq)
        if node is not None:
            return node
        parent_entry = self._parent_entry(entry)
        if parent_entry is None:
            group = self._group_node(entry)
            if group is None:
                return None
            self.load(group)
            return self._by_entry.get(entry.seq)
        parent = self.node_for(parent_entry)
        if parent is None:
            return None
        self.load(parent)
        return self._by_entry.get(entry.seq)

    def _group_node(self, entry: Entry) -> TreeNode[NodeData] | None:
        """The group node a top-level `entry` goes under (built, with the groups above it), or None
        when the turns are not grouped or the filter hides the group."""
        model = self.model
        if not isinstance(model, IndexedTrajectory) or model.top_span is None:
            return None
        turn = model.segment_number(entry.seq) - 1
        if turn < 0:
            return None
        span = model.top_span
        node: TreeNode[NodeData] | None = None
        while span >= GROUP_SPAN:
            node = self._by_group.get(model.group_of(turn, span))
            if node is None:
                return None
            self.load(node)
            span //= 10
        return node

    def reveal(self, entry: Entry) -> bool:
        """Expand the way to `entry` and put the cursor on it; False when the filter hides it."""
        node = self.node_for(entry)
        if node is None:
            return False
        ancestor = node.parent
        while ancestor is not None and ancestor is not self.root:
            ancestor.expand()
            ancestor = ancestor.parent
        self.last_line  # noqa: B018  (lays the lines out now, so the node has its line)
        self.move_cursor(node)
        self.scroll_to_node(node, animate=False)
        return True

    @property
    def cursor_entry(self) -> Entry | None:
        node = self.cursor_node
        return entry_of(node.data) if node is not None else None
