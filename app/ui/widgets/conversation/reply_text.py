"""The answer of a reply as Markdown, streamed as a column of pieces so that a long reply costs no
more per frame than a short one.

Textual lays out a Markdown widget whole whenever its last block grows, and a growing container
makes its siblings' cached sizes miss too; with one widget per reply, every frame of a long reply
costs more than the one before, and keys typed meanwhile wait behind it. Here only the last piece
grows. Once it holds `PIECE_BLOCKS` top-level blocks, the finished ones stay where they are, in a
piece that is closed (its height is kept per width), and the open block is parsed again into a new
piece. Markdown never changes a top-level block once a later one has started, so the pieces show
what one widget would; the seam goes where the two blocks' margins add up to what one widget
collapses them to (one of them is 0).

This module imports markdown-it: it is loaded with the first reply, not at start-up.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from contextlib import contextmanager

from linkify_it import LinkifyIt
from markdown_it import MarkdownIt
from textual.app import ComposeResult
from textual.containers import ScrollableContainer, Vertical
from textual.content import Content
from textual.events import Resize
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock

from app.ui.widgets.conversation.block import PlainBackground

PIECE_BLOCKS = 4
"""The growing piece is closed once it holds more top-level blocks than this. Smaller pieces are
closed (and their open block parsed again) more often, but fewer widgets above the screen are still
arranged on each frame while the view follows the stream: frames are shorter than with 12."""
STEP_CHARACTERS = 400
"""The most text appended in one frame."""


_streams = 0


@contextmanager
def _young_collections_only() -> Iterator[None]:
    """While a reply streams, the collector leaves the oldest generation alone.

    A full collection walks every live object, and a long reply's widgets are most of them: at
    full speed they stalled the app every second or two, keys included.
    Young garbage is still collected as usual; the old is, as soon as the last stream ends.
    """
    global _streams
    if _streams == 0:
        young, middle, _old = gc.get_threshold()
        gc.set_threshold(young, middle, 2**31 - 1)
    _streams += 1
    try:
        yield
    finally:
        _streams -= 1
        if _streams == 0:
            young, middle, _old = gc.get_threshold()
            gc.set_threshold(young, middle, _OLD_THRESHOLD)


_OLD_THRESHOLD = gc.get_threshold()[2]


class _SchemeLinks(LinkifyIt):
    """Bare links with a scheme (`https://…`, `mailto:`) and e-mail addresses, as GitHub links them;
    not fuzzy host names. linkify-it's default took every file name an agent mentions for a host
    (`README.md`, `app.py`, `setup.sh` became links to `http://README.md`, .md and .py being
    country domains).

    `pretest` asks for what such a link cannot do without (every scheme has a `:` or is `//`, an
    address has an `@`) instead of linkify-it's own pattern, mostly the fuzzy host names switched
    off here: compiling it held up the first reply shown."""

    def pretest(self, text: str) -> bool:
        return ":" in text or "@" in text or "//" in text


_PARSER = MarkdownIt("gfm-like")
"""The parser of every piece: Textual's default, made once. Textual would make a new one for each
update and each append (each one a cost while a reply streams); a parse keeps its state
apart from the parser's, so one serves them all."""
_PARSER.linkify = _SchemeLinks(options={"fuzzy_link": False})


def _shared_parser() -> MarkdownIt:
    return _PARSER


# Textual's list blocks, which `textual.widgets.markdown` does not export by name.
_BulletList = Markdown.BLOCKS["bullet_list_open"]
_ORDERED_ITEM = Markdown.BLOCKS["list_item_ordered_open"]
_LIST_ITEMS = (Markdown.BLOCKS["list_item_unordered_open"], _ORDERED_ITEM)


class ListBullet(Widget):
    """A list item's bullet or number, styled as Textual's."""

    DEFAULT_CSS = """
    ListBullet {
        width: auto;
        color: $text-primary;
        &:light { color: $text-secondary; }
    }
    """

    def __init__(self, symbol: str) -> None:
        super().__init__()
        self.symbol = symbol

    def get_selection(self, _selection: object) -> tuple[str, str]:
        return self.symbol, " "

    def render(self) -> Content:
        return Content(self.symbol)


class FlatList(_BulletList):  # type: ignore[misc,valid-type]
    """A list, bulleted or numbered, as a grid of two columns, bullet and item: Textual's own puts
    each item in a row and a column of its own, five widgets for a one-line item where this has two
    (and the list), and a frame costs about as much per widget shown as per line. It looks the same:
    the bullets are one width in a list, so the first column is as wide as a row's bullet would be.
    (Textual's two kinds of list differ only in their bullets.)"""

    DEFAULT_CSS = """
    FlatList {
        layout: grid;
        grid-size: 2;
        grid-columns: auto 1fr;
        grid-rows: auto;
        height: auto;
        & > Vertical { height: auto; }
    }
    """

    def compose(self) -> ComposeResult:
        # `MarkdownBlock.compose` yields the blocks the parser put in a block (here the list's
        # items, in an item its paragraphs and lists); Textual's list classes override it.
        items = [block for block in MarkdownBlock.compose(self) if isinstance(block, _LIST_ITEMS)]
        for item, symbol in zip(items, _symbols(items)):
            yield ListBullet(symbol)
            blocks = list(item.compose())
            yield blocks[0] if len(blocks) == 1 else Vertical(*blocks)


def _symbols(items: list[MarkdownBlock]) -> list[str]:
    """Each item's bullet; numbers from the first item's on, right-aligned to the widest, as
    Textual numbers them."""
    if not items or not isinstance(items[0], _ORDERED_ITEM):
        return [item.bullet for item in items]  # type: ignore[attr-defined]
    try:
        start = int(items[0].bullet)  # type: ignore[attr-defined]
    except ValueError:
        start = 1
    numbers = [f"{number}. " for number in range(start, start + len(items))]
    width = max(map(len, numbers)) + 1
    return [number.rjust(width) for number in numbers]


class ReplyPiece(PlainBackground, Markdown):
    """A part of the answer; once closed its blocks never change, so its height depends only on
    the width (Textual would measure every block again whenever the reply grows)."""

    BLOCKS = Markdown.BLOCKS | {"bullet_list_open": FlatList, "ordered_list_open": FlatList}

    def __init__(self, markdown: str) -> None:
        super().__init__(markdown, parser_factory=_shared_parser)
        self.closed = False
        # Shown through `update` (a reply mounted with its text): Textual's `append` after `update`
        # parses again from the text's last line, not from its last block's first, which loses or
        # repeats lines when that block is unfinished. Such a piece is built again before appending.
        self.shown_whole = bool(markdown)
        self._closed_height = (-1, 0)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if not self.closed:
            return super().get_content_height(container, viewport, width)
        measured_width, height = self._closed_height
        if measured_width != width:
            height = super().get_content_height(container, viewport, width)
            self._closed_height = (width, height)
        return height


class SetAside(Widget):
    """Stands in, at their height, for the closed pieces above the screen while the view follows
    the stream: Textual arranges every displayed widget on every frame, seen or not."""

    def __init__(self) -> None:
        super().__init__()
        self.lines = 0

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self.lines  # the stream layout asks for this, not for a height style

    def render(self) -> str:
        return ""


class ReplyText(PlainBackground, Vertical):
    DEFAULT_CSS = """
    ReplyText {
        height: auto;
        layout: stream;  /* each piece is asked its height, nothing more */
        & > ReplyPiece { margin: 0; padding: 0 1; }
    }
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        self._text = text
        self._pending: list[str] = []
        self._new_text = asyncio.Event()
        self._frame_shown = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._stopping = False
        self._width = 0

    def compose(self) -> ComposeResult:
        yield SetAside()
        yield ReplyPiece(self._text)

    def on_mount(self) -> None:
        scroller = self._scroller()
        if scroller is not None:
            self.watch(scroller, "scroll_y", self._scrolled, init=False)

    async def write(self, fragment: str) -> None:
        """Queue a fragment; the writer appends what arrived while it was busy at once."""
        self._pending.append(fragment)
        self._new_text.set()
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_pending())
        await asyncio.sleep(0)

    async def stop(self) -> None:
        """Return once every fragment written so far is shown."""
        if self._writer is not None:
            self._stopping = True
            self._new_text.set()
            self._frame_shown.set()
            writer, self._writer = self._writer, None
            await writer
            self._stopping = False

    async def update(self, text: str) -> None:
        """Show `text` as one piece, as a resumed reply shows it."""
        await self.stop()
        with self.app.batch_update():
            await self.remove_children(ReplyPiece)
            await self.mount(ReplyPiece(text))

    def on_resize(self, event: Resize) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            self._bring_back()  # the pieces set aside may wrap to other heights now

    def _scrolled(self) -> None:
        if not self._following():
            self._bring_back()

    def _scroller(self) -> ScrollableContainer | None:
        return next((node for node in self.ancestors if isinstance(node, ScrollableContainer)), None)

    def _following(self) -> bool:
        scroller = self._scroller()
        return scroller is not None and scroller.scroll_y >= scroller.max_scroll_y - 1

    def _set_aside_out_of_sight(self) -> None:
        """Set aside the oldest closed pieces while those after them still fill the screen."""
        scroller = self._scroller()
        if scroller is None or not self._following():
            return
        # The newest closed piece has not been laid out since it lost its open block.
        settled = [piece for piece in self.query_children(ReplyPiece) if piece.closed and piece.display][:-1]
        below = sum(piece.outer_size.height for piece in settled)
        spacer = self.query_children(SetAside).first()
        for piece in settled:
            below -= piece.outer_size.height
            if below < scroller.size.height:
                break
            spacer.lines += piece.outer_size.height
            # An inline style, not a class: a class would match the stylesheet again against the
            # piece and every widget in it, keys waiting.
            piece.display = False
        spacer.refresh(layout=True)

    def set_aside(self) -> list[ReplyPiece]:
        """The pieces set aside now."""
        return [piece for piece in self.query_children(ReplyPiece) if not piece.display]

    def _bring_back(self) -> None:
        aside = self.set_aside()
        if aside:
            with self.app.batch_update():
                for piece in aside:
                    piece.display = True
                spacer = self.query_children(SetAside).first()
                spacer.lines = 0
                spacer.refresh(layout=True)

    def on_unmount(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            self._writer = None

    async def _write_pending(self) -> None:
        with _young_collections_only():
            while self._pending or not self._stopping:
                if not self._pending:
                    self._new_text.clear()
                    await self._new_text.wait()
                    continue
                # At most one step of text a frame: a reply arriving faster than it can be
                # shown falls behind for a moment rather than stalling the screen and the keys.
                # Once the stream is stopping, the rest goes at once.
                text = "".join(self._pending)
                step = len(text) if self._stopping else STEP_CHARACTERS
                self._pending = [text[step:]] if len(text) > step else []
                piece = await self._open_piece()
                await piece.append(text[:step])
                await self._close_finished_blocks(piece)
                if not self._stopping:
                    # Whoever stops the stream may be what refreshes the screen: it wakes us.
                    self._frame_shown.clear()
                    self.call_after_refresh(self._frame_shown.set)
                    await self._frame_shown.wait()

    async def _close_finished_blocks(self, piece: ReplyPiece) -> None:
        blocks = list(piece.query_children(MarkdownBlock))
        if len(blocks) <= PIECE_BLOCKS:
            return
        # The last block is still open and may yet change kind (a "`" paragraph becomes a fence),
        # margins included: the seam goes before the latest finished block whose top margin and
        # the previous block's bottom margin add up to what one widget collapses them to.
        seam = next(
            (
                index
                for index in range(len(blocks) - 2, 0, -1)
                if min(blocks[index - 1].styles.margin.bottom, blocks[index].styles.margin.top) == 0
            ),
            None,
        )
        if seam is None:
            return
        first_line = blocks[seam].source_range[0]
        rest = "".join(piece.source.splitlines(keepends=True)[first_line:])
        with self.app.batch_update():
            await piece.remove_children(blocks[seam:])
            piece.closed = True
            await self._appended_piece(rest)
        self._set_aside_out_of_sight()

    async def _open_piece(self) -> ReplyPiece:
        """The last piece, ready for `append` (see `ReplyPiece.shown_whole`)."""
        piece = self.query_children(ReplyPiece).last()
        if not piece.shown_whole:
            return piece
        with self.app.batch_update():
            await piece.remove()
            return await self._appended_piece(piece.source)

    async def _appended_piece(self, text: str) -> ReplyPiece:
        """A new last piece holding `text`, built through `append` so that more can follow."""
        piece = ReplyPiece("")
        await self.mount(piece)
        if piece.is_attached:  # else this reply left the screen meanwhile (mounted again, it starts over)
            await piece.append(text)
        return piece
