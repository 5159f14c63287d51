"""A streamed reply is shown in pieces (`app/ui/widgets/conversation/reply_text.py`); on the screen it must look
exactly as the same text shown whole, as a resumed session shows it."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from linkify_it import LinkifyIt
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Markdown

from app.ui.widgets.conversation.reply_text import FlatList, ReplyPiece, ReplyText, _SchemeLinks
from tests.support.screen import screen_cells, screen_rows

pytestmark = pytest.mark.timeout(120)

SECTION = """## Step {n}

A paragraph with **bold** and `code`, long enough to wrap on a narrow screen: it goes on and on
for a while, then stops.

- one item
- another item

> A quotation right after a list.

> And another quotation straight after it.

1. first
2. second

```python
print({n})
```

---
"""
REPLY = "# A long answer\n\n" + "".join(SECTION.format(n=n) for n in range(6)) + "That is all.\n"


class _Reply(App[None]):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield ReplyText(self.text)


async def _stream(app: _Reply, pilot: Pilot[None], size: int = 23, start: int = 0) -> ReplyText:
    """The reply from `start` in fragments of `size` characters (they end anywhere in a block, a
    mark-up or a word), the screen refreshed after each, then the stream stopped."""
    reply = app.query_one(ReplyText)
    for at in range(start, len(REPLY), size):
        await reply.write(REPLY[at : at + size])
        await pilot.pause()
    await reply.stop()
    await pilot.pause()
    return reply


async def _whole(size: tuple[int, int]) -> list[tuple[str, str]]:
    app = _Reply(REPLY)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        app.query_one(VerticalScroll).scroll_home(animate=False)
        await pilot.pause()
        return screen_cells(app)


# Fragment sizes that cut the reply in different places: 13 once closed a piece before a "`"
# paragraph that became a fence (a blank line too many), 23 and 37 once lost lines of a piece begun
# with text (Textual's `append` after `update` parses again from the wrong line).
@pytest.mark.slow(seconds=17)
@pytest.mark.parametrize("fragment", [13, 23, 37])
def test_a_streamed_reply_looks_as_the_same_text_shown_whole(fragment: int) -> None:
    size = (70, 200)  # all of it on the screen

    async def streamed() -> tuple[list[tuple[str, str]], int]:
        app = _Reply("")
        async with app.run_test(size=size) as pilot:
            reply = await _stream(app, pilot, fragment)
            pieces = len(reply.query_children(ReplyPiece))
            return screen_cells(app), pieces

    cells, pieces = asyncio.run(streamed())
    assert pieces >= 3  # the reply holds PIECE_BLOCKS blocks several times over
    assert cells == asyncio.run(_whole(size))


@pytest.mark.slow(seconds=14)
def test_a_reply_mounted_again_mid_stream_goes_on_as_one_streamed_from_the_start() -> None:
    """A reply scrolled out of the conversation's window and back while it streams is mounted with
    its text so far, which may end inside a code fence; what streams after must join it as it
    would have."""
    size = (70, 200)
    cut = REPLY.index("print(3)") + 3

    async def streamed() -> list[tuple[str, str]]:
        app = _Reply(REPLY[:cut])
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await _stream(app, pilot, 29, start=cut)
            return screen_cells(app)

    assert asyncio.run(streamed()) == asyncio.run(_whole(size))


@pytest.mark.slow(seconds=18)
def test_pieces_above_the_screen_are_set_aside_while_following_and_come_back_on_scroll() -> None:
    size = (70, 30)

    async def streamed() -> tuple[list[tuple[str, str]], int, int]:
        app = _Reply("")
        async with app.run_test(size=size) as pilot:
            scroller = app.query_one(VerticalScroll)
            scroller.anchor()
            reply = await _stream(app, pilot)
            aside = len(reply.set_aside())
            held = scroller.virtual_size.height
            scroller.scroll_home(animate=False)  # the user scrolls up: they come back
            await pilot.pause()
            assert not reply.set_aside()
            assert scroller.virtual_size.height == held  # the spacer held their place exactly
            return screen_cells(app), aside, len(reply.query_children(ReplyPiece))

    cells, aside, pieces = asyncio.run(streamed())
    assert aside >= 1 and pieces >= 3
    assert cells == asyncio.run(_whole(size))


def _links(app: _Reply) -> list[str]:
    """The click actions of the links the screen shows, in order (a link's cells share one)."""
    actions: list[str] = []
    previous = None
    for row in screen_rows(app):
        for _char, style in row:
            action = style.meta.get("@click") if style is not None else None
            if action is not None and action != previous:
                actions.append(action)
            previous = action
    return actions


def test_a_reply_links_urls_and_addresses_but_not_file_names() -> None:
    """GitHub's autolinks: a URL with its scheme and an e-mail address. linkify-it's fuzzy host names
    made every file name an agent mentions a link (`app.py` to http://app.py)."""
    text = "Edit README.md and app.py, run setup.sh; see https://example.com/docs or write to dev@example.org."

    async def shown() -> list[str]:
        app = _Reply(text)
        async with app.run_test(size=(120, 10)) as pilot:
            await pilot.pause()
            return _links(app)

    assert asyncio.run(shown()) == ["link('https://example.com/docs')", "link('mailto:dev@example.org')"]


# Pieces of links and of text around them: a pretest that forgot `@` misses `a@x.org`, one that
# forgot `//` misses a protocol-relative `//x.com`.
LINK_PIECES = ["http", "https", "ftp", "mailto", "x", "com", "org", ":", "//", "/", "@", ".", " ", "\n", "-", "www", "x.com", "a@x.org"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(LINK_PIECES), max_size=10))
def test_the_link_pretest_lets_through_every_text_with_a_link(pieces: list[str]) -> None:
    """The parser's cheap pretest must pass whatever linkify-it (without fuzzy host names) would link."""
    text = "".join(pieces)
    if LinkifyIt(options={"fuzzy_link": False}).test(text):
        assert _SchemeLinks(options={"fuzzy_link": False}).pretest(text)


LISTS = """Before the lists.

- one item
- another item, long enough to wrap on a narrow screen: it goes on and on for a while, then stops
- a third

1. first
2. second
3. third
4. fourth
5. fifth
6. sixth
7. seventh
8. eighth
9. ninth
10. tenth

A list numbered from three:

3. numbered from three
4. and on

- outer
  - inner one
  - inner two
    1. deep
- an item of two paragraphs

  its second paragraph

  ```python
  code()
  ```
- last

* a star list
+ a plus list

After the lists.
"""


class _Whole(App[None]):
    def __init__(self, markdown: type[Markdown]) -> None:
        super().__init__()
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield self.markdown(LISTS)


@pytest.mark.parametrize("size", [(44, 60), (100, 50)])
def test_lists_look_as_textuals_own(size: tuple[int, int]) -> None:
    """A reply's lists are grids of bullets and items (two widgets an item, not five): on the
    screen they must be Textual's lists, nested and numbered ones included."""

    async def shown(markdown: type[Markdown]) -> tuple[list[tuple[str, str]], int]:
        app = _Whole(markdown)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            return screen_cells(app), len(app.query(FlatList))

    cells, flat = asyncio.run(shown(ReplyPiece))
    textuals, none = asyncio.run(shown(Markdown))
    assert (flat, none) == (8, 0)
    assert cells == textuals
