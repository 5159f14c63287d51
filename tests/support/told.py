"""What an app was told, read from the messages that reached it (as Harlequin's tests capture
them), not from the app's private state: the notifications it showed and the turns that ended.

`Told` is a `run_test(message_hook=...)`, which sees every message from the app's start (a
notification sent while the app mounts included); `turn_ends` subscribes to the app's
`message_signal` once it runs, for a turn that starts after it.
"""

from __future__ import annotations

from collections.abc import Callable
from weakref import WeakKeyDictionary

from textual.app import App
from textual.message import Message
from textual.notifications import Notification, Notify
from textual.worker import Worker, WorkerState

TURN_GROUP = "turn"
"""The workers of the chat's turns and compactions (`ToolscopeApp.run_worker(..., group=...)`)."""
FINISHED = frozenset({WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED})


def turn_finished(message: Message) -> bool:
    return (
        isinstance(message, Worker.StateChanged)
        and message.worker.group == TURN_GROUP
        and message.state in FINISHED
    )


class Told:
    """Pass to `run_test(message_hook=told)`; it keeps what the app was told."""

    def __init__(self) -> None:
        self.notifications: list[Notification] = []
        self.turns_ended = 0

    def __call__(self, message: Message) -> None:
        if isinstance(message, Notify):
            self.notifications.append(message.notification)
        elif turn_finished(message):
            self.turns_ended += 1

    def notes(self, containing: str = "") -> list[str]:
        """The notifications' messages (those containing `containing`), oldest first."""
        return [str(note.message) for note in self.notifications if containing in str(note.message)]


_ENDED: WeakKeyDictionary[App[object], list[Worker[object]]] = WeakKeyDictionary()


def turn_ends(app: App[object]) -> Callable[[], bool]:
    """Whether a turn has ended since this call, as the app handled its last state change (one
    subscription per app, however many prompts a test sends)."""
    ended = _ENDED.get(app)
    if ended is None:
        ended = _ENDED[app] = []

        def heard(message: Message) -> None:
            if turn_finished(message):
                assert isinstance(message, Worker.StateChanged)
                ended.append(message.worker)

        app.message_signal.subscribe(app, heard, immediate=True)
    before = len(ended)
    return lambda: len(ended) > before
