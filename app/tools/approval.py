"""Asking the user before a tool acts on the world (writes a file, runs a command).

Side-effecting built-ins build an `ApprovalRequest` and await `Approver.approve()` before they do
anything; a refusal becomes an `APPROVAL_DENIED` tool result and nothing happens. The TUI
implements `Approver` with a prompt; headless runs use `AutoApprover`, which refuses unless the
user passed `--approve`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ApprovalRequest:
    """What a tool is about to do, in the words shown to the user.

    `summary` is one localized line ("Run a command in /repo"); `detail` is the exact thing that
    will happen (the command line, the start of the new file content), not translated; `diff` is a
    unified diff of a file's change when there is an old file to compare with.
    """

    tool_name: str
    call_id: str
    summary: str
    detail: str
    diff: str = ""


class Approver(Protocol):
    async def approve(self, request: ApprovalRequest) -> bool:
        """True lets the tool act; False refuses (the tool reports `APPROVAL_DENIED`)."""
        ...


class AutoApprover:
    """The headless answer: every request gets the same answer, chosen by `--approve`."""

    def __init__(self, approve_all: bool) -> None:
        self.approve_all = approve_all

    async def approve(self, request: ApprovalRequest) -> bool:
        return self.approve_all
