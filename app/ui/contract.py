"""What a screen may ask of the app it is over: typed contracts, not attributes reached for.

Both apps, the chat (`ToolscopeApp`) and `toolscope view` (`TrajectoryApp`), host the trajectory and
the inspector, which ask a `SessionHost`; the chat screen and its conversation ask the chat for more
(`ChatHost`). What the app tells the chat screen goes through the screen's methods, never into its
widgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from textual.app import App
    from textual.signal import Signal

    from app.llm.routes import Route, RouteCatalog
    from app.report.prices import PriceBook
    from app.session.events import Envelope
    from app.session.session import Session
    from app.session.view import SessionView


@runtime_checkable
class SessionHost(Protocol):
    """An app showing a session to the screens over it."""

    catalog: RouteCatalog
    """The routes the inspector compares."""
    session_advanced: Signal[Envelope | None] | None
    """Published after each logged event the app has shown (None: the whole session was replaced);
    None where the session does not grow while it is shown (a file browsed)."""

    def view(self) -> SessionView | None:
        """The session shown, as its view (None before there is one)."""
        ...


@runtime_checkable
class ChatHost(SessionHost, Protocol):
    """The chat app, as its own screen and conversation see it."""

    route: Route
    session_advanced: Signal[Envelope | None]
    read_only: Session | None
    """The session shown read-only (another process writes it), or None."""

    def prices(self) -> PriceBook:
        """The prices the status line costs the session with (config.toml's over the bundled); a
        method, not a property: `isinstance` against this protocol would read a property."""
        ...

    @property
    def session(self) -> Session | None:
        """The session shown (its headers say what a tool change changed)."""
        ...

    def start_runtime(self) -> None:
        """Start the tools, the prompt history and the session behind the first frame."""
        ...

    def cancel_turn(self) -> None: ...


def session_host(app: App[object]) -> SessionHost:
    if not isinstance(app, SessionHost):
        raise TypeError(f"{type(app).__name__} shows no session to its screens")
    return app


def chat_host(app: App[object]) -> ChatHost:
    if not isinstance(app, ChatHost):
        raise TypeError(f"{type(app).__name__} is not the chat")
    return app
