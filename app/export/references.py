"""A large text is shown once in an export; everywhere else it is referred to (issue 23).

Every request's wire body carries its whole message window on every route, so a 10 MB tool result
reached each route's body diff, and an instructions update each route's blocks, request after
request. A text of `LARGE_TEXT` characters or more is shown in full where its item is (the HTML
gives that element an id, its anchor); a wire body or a block that carries it shows a
`Reference` instead: what the text is, its size and the turn it is shown in (in HTML, a link to
the anchor). `Texts` remembers the large texts shown so far by the seq of their item, only while a
later request can still carry them (its message window), so it holds nothing of the texts and
its size does not grow with the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from app.i18n import _
from app.llm.deepseek.body import summary_text
from app.session.events import InstructionsUpdate
from app.session.view import ModelRequest
from app.session.view_items import AssistantItem, ContextItem, Message, SummaryItem, ToolResultItem, UserItem

LARGE_TEXT = 1024
"""Characters from which a text is shown once: a reference costs about 150 bytes of HTML."""


@dataclass(frozen=True, slots=True)
class Reference:
    anchor: str
    """The id of the element that shows the text (`text-SEQ` or `text-SEQ-PART`)."""
    what: str
    size: int
    """UTF-8 bytes."""
    turn: int

    def note(self) -> str:
        """What the text is, its size and where it is shown, in the interface language."""
        size = f"{self.size / 1e6:.1f} MB" if self.size >= 1_000_000 else f"{self.size / 1e3:.1f} kB"
        if self.turn:
            return _("{what}, {size}, shown in turn {turn}").format(what=self.what, size=size, turn=self.turn)
        return _("{what}, {size}, shown before the first turn").format(what=self.what, size=size)


def anchor(seq: int, part: str = "") -> str:
    return f"text-{seq}-{part}" if part else f"text-{seq}"


def shown_texts(item: Message) -> Iterator[tuple[str, str]]:
    """(part, text) of every text an export shows of a message, `part` naming its place in the
    item (see `anchor`)."""
    if isinstance(item, UserItem):
        yield "", item.text
    elif isinstance(item, ToolResultItem):
        yield "", item.content
    elif isinstance(item, SummaryItem):
        yield "", item.summary
    elif isinstance(item, ContextItem):
        if isinstance(item.message, InstructionsUpdate):
            yield "", item.message.text
    elif isinstance(item, AssistantItem):
        yield "reasoning", item.reasoning
        yield "text", item.text
        for number, call in enumerate(item.tool_calls):
            yield f"call-{number}", call.arguments


def describe(item: Message, part: str) -> str:
    """What the text at `part` of `item` is, for a reference to it."""
    if isinstance(item, UserItem):
        return _("user message")
    if isinstance(item, ToolResultItem):
        return _("tool result of call {id}").format(id=item.call_id)
    if isinstance(item, SummaryItem):
        return _("compaction summary")
    if isinstance(item, ContextItem):
        return _("instructions update")
    if part == "reasoning":
        return _("reasoning")
    if part == "text":
        return _("assistant text")
    call = item.tool_calls[int(part.removeprefix("call-"))]
    return _("arguments of call {id}").format(id=call.call_id)


def _wire_forms(item: Message, part: str, text: str) -> Iterator[str]:
    """The text as a wire body may carry it: whole, and each content part of an assistant's reasoning
    or text (a wire may send them apart), or a summary with the prefix it is sent with."""
    yield text
    if isinstance(item, SummaryItem):
        yield summary_text(item)
    elif isinstance(item, AssistantItem) and part in ("reasoning", "text"):
        yield from (content.text for content in item.content if content.type == part)


class Texts:
    """The large texts an export has shown that a later request may still carry."""

    def __init__(self) -> None:
        self._shown: dict[int, dict[str, Reference]] = {}  # item seq → part → reference

    def show(self, item: Message, part: str, text: str, turn: int) -> str | None:
        """Record `text`, about to be shown (in turn `turn`) as part `part` of `item`, if it is
        large: the anchor to give the element that shows it, or None."""
        if len(text) < LARGE_TEXT:
            return None
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        reference = Reference(anchor(item.seq, part), describe(item, part), size, turn)
        self._shown.setdefault(item.seq, {})[part] = reference
        return reference.anchor

    def of_request(self, request: ModelRequest) -> dict[str, Reference]:
        """Each large text of `request`'s messages, in every form its wire bodies may carry it, with
        its reference. The texts of messages no later request can carry (compacted away) are
        forgotten here."""
        found: dict[str, Reference] = {}
        if not self._shown:
            return found
        kept: dict[int, dict[str, Reference]] = {}
        for message in request.messages:
            references = self._shown.get(message.seq)
            if references is None:
                continue
            kept[message.seq] = references
            for part, text in shown_texts(message):
                if part in references:
                    for form in _wire_forms(message, part, text):
                        found.setdefault(form, references[part])
        kept.update((seq, references) for seq, references in self._shown.items() if seq >= request.seq)
        self._shown = kept
        return found

    def block(self, seq: int) -> Reference | None:
        """The reference of the instructions update at `seq`, if it was large."""
        return self._shown.get(seq, {}).get("")
