"""The run_command tool: a bash command in the working directory, bounded in time and output.

`run_command` is not confined: it starts in the working directory, but the command itself can
do anything the user can — it asks the `Approver` first, and the approval prompt is the guard.
Its output is bounded by `OutputLimits` and ends with an explicit notice when cut.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Any

import anyio

from app.i18n import _
from app.tools.file_tools import Workspace
from app.tools.tool import OutputLimits, ToolContext, ToolErrorCode, ToolFailure, bound_text, with_notice


@dataclass(frozen=True)
class CommandSettings:
    """`run_command` timeouts in seconds: the default, and the most a call may ask for."""

    default_timeout: float = 120.0
    max_timeout: float = 600.0


class CommandTool:
    def __init__(self, workspace: Workspace, limits: OutputLimits, settings: CommandSettings) -> None:
        self.workspace = workspace
        self.limits = limits
        self.settings = settings

    async def run_command(self, arguments: dict[str, Any], context: ToolContext) -> str:
        """Run `bash -c <command>` in the working directory, bounded in time and output.

        Why `bash -c` with the command as one argument rather than `shell=True`: the model writes
        bash (pipes, `&&`, globs), and `shell=True` would hand it to `/bin/sh`, which is often not
        bash; passing it as a single argv element means Python adds no quoting of its own. It is
        exactly as powerful as a shell — arbitrary commands are the point — so the approval prompt
        is the safety, not the invocation. The command gets its own process group, so a timeout
        or a cancelled turn kills it together with everything it started.
        """
        command: str = arguments["command"]
        timeout = arguments.get("timeout_seconds", self.settings.default_timeout)
        summary = _("Run a command in {directory}").format(directory=self.workspace.root)
        await context.ask("run_command", summary, command)

        process = await anyio.open_process(
            ["bash", "-c", command],
            cwd=self.workspace.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        kept = bytearray()
        total = 0
        finished = False
        try:
            with anyio.move_on_after(timeout) as deadline:
                assert process.stdout is not None
                async for chunk in process.stdout:
                    total += len(chunk)
                    if len(kept) < self.limits.max_bytes:
                        kept += chunk[: self.limits.max_bytes - len(kept)]
                await process.wait()
                finished = True
        finally:
            if not finished:
                # Timed out or cancelled: bash may be gone while a child still holds the pipe.
                _kill_group(process.pid)
            with anyio.CancelScope(shield=True):
                await process.aclose()

        output, cut = bound_text(kept.decode("utf-8", errors="replace"), self.limits)
        if cut or total > len(kept):
            notice = f"output truncated: {total} bytes in all, only the beginning is shown"
            output = with_notice(output, notice)
        if deadline.cancelled_caught:
            message = f"timed out after {timeout:g} s; the command and its child processes were killed"
            raise ToolFailure(ToolErrorCode.TOOL_TIMEOUT, message, with_notice(output, message))
        result = with_notice(output, f"exit code {process.returncode}")
        if process.returncode != 0:
            raise ToolFailure(ToolErrorCode.COMMAND_FAILED, f"exit code {process.returncode}", result)
        return result


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
