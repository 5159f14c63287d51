"""The event models (`app.session.events`), imported when first used.

A log is read through msgspec's Structs (`app.session.structs`); the pydantic models are needed to
build a part's model, to write an event or to name a line's fault. Modules that read a log name the
models through `events` below, in code and in annotations (which pydantic and `typing` resolve in
the module's namespace), and a resumed chat's first frame imports no pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class _EventModels:
    """`app.session.events`, imported by the first attribute read."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # introspection (copy, inspect, doctest) imports nothing
            raise AttributeError(name)
        from app.session import events as module

        return getattr(module, name)

    def __repr__(self) -> str:
        return "<app.session.events, imported when first used>"


if TYPE_CHECKING:
    from app.session import events
else:
    events = _EventModels()
