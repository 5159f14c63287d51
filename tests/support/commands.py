"""`toolscope` commands run in the test's own process: what the console script would print and
return, at a fraction of a subprocess's cost (its imports), for tests that run many of them.

A command that does not end within `limit` seconds fails the test (a hang is a finding, not a
wait): it runs in a daemon thread, and what it printed so far is shown.
"""

from __future__ import annotations

import io
import threading
from contextlib import redirect_stderr, redirect_stdout
from typing import NamedTuple

import pytest

from app import cli


class Outcome(NamedTuple):
    code: int
    stdout: str
    stderr: str


def run_cli(*args: str, limit: float = 60.0) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    result: list[int | BaseException] = []

    def command() -> None:
        try:
            with redirect_stdout(out), redirect_stderr(err):
                result.append(cli._run(list(args)))
        except BaseException as error:  # noqa: BLE001 - reported below, with the command
            result.append(error)

    thread = threading.Thread(target=command, daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        pytest.fail(f"`toolscope {' '.join(args)}` did not end within {limit} s; it printed {out.getvalue()[-500:]!r}")
    (returned,) = result
    if isinstance(returned, BaseException):
        raise returned
    return Outcome(returned, out.getvalue(), err.getvalue())
