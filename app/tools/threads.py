"""Blocking tool work off the event loop, in threads that can never keep the program alive.

Why not `anyio.to_thread` or an executor: their threads are not daemon threads, so the interpreter
waits for them at exit. A file tool blocked in the kernel (a FIFO, a hung network mount) would then
keep `toolscope` running after Ctrl+C although the turn was closed as aborted. Here every call gets
a daemon thread and the awaiting task is free the moment it is cancelled; the abandoned thread ends
with the process. The file tools avoid the blocking opens they know of (see `file_tools`), so this is
the guard for the ones nobody foresaw.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def run_in_daemon_thread(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` in a fresh daemon thread; a cancel abandons it instead of waiting."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():  # cancelled meanwhile: nobody waits for the outcome
            setter(value)

    def deliver(setter: Callable[[Any], None], value: Any) -> None:
        try:
            loop.call_soon_threadsafe(settle, setter, value)
        except RuntimeError:
            pass  # the loop is closed: the program is ending and nobody waits

    def work() -> None:
        try:
            result = function(*args)
        except BaseException as error:  # the awaiting task re-raises it
            deliver(future.set_exception, error)
        else:
            deliver(future.set_result, result)

    name = f"tool: {getattr(function, '__name__', 'work')}"
    context = contextvars.copy_context()  # as anyio's threads see the caller's context variables
    threading.Thread(target=context.run, args=(work,), name=name, daemon=True).start()
    return await future
