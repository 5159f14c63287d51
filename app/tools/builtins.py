"""Built-in tools: read_file, list_dir, search_text (read-only), write_file (`app.tools.file_tools`)
and run_command (`app.tools.command_tool`), with the descriptions and argument schemas the model
reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.tools.command_tool import CommandSettings, CommandTool
from app.tools.file_tools import FileTools, Workspace
from app.tools.tool import OutputLimits, Tool


def builtin_tools(
    workspace: Workspace,
    limits: OutputLimits = OutputLimits(),
    commands: CommandSettings = CommandSettings(),
) -> tuple[Tool, ...]:
    """The built-in tools, in registry order."""
    # Each result may end with one truncation notice; run_command's also with its exit code.
    files = FileTools(workspace, limits.reserving(1))
    shell = CommandTool(workspace, limits.reserving(2), commands)
    relative_path = "File path, relative to the working directory."
    return (
        Tool(
            "read_file",
            "Read a UTF-8 text file from the workspace. Long files are returned in pieces: pass "
            "`offset` (1-based line number) and `limit` (number of lines) to read further.",
            _object_schema(
                {
                    "path": _property("string", relative_path),
                    "offset": _property("integer", "First line to return (1-based).", minimum=1),
                    "limit": _property(
                        "integer", "How many lines to return.", minimum=1, maximum=files.limits.max_lines
                    ),
                },
                required=["path"],
            ),
            files.read_file,
            read_only=True,
        ),
        Tool(
            "list_dir",
            "List a directory of the workspace, sorted by name; directories end with '/'.",
            _object_schema(
                {"path": _property("string", "Directory path; defaults to the working directory.")}
            ),
            files.list_dir,
            read_only=True,
        ),
        Tool(
            "search_text",
            "Search files under a directory for lines matching a regular expression (Python "
            "syntax). Prints 'path:line: text' per match. Skips hidden directories, "
            "node_modules, __pycache__, binary and very large files.",
            _object_schema(
                {
                    "pattern": _property("string", "Regular expression.", minLength=1),
                    "path": _property(
                        "string", "Directory or file to search; defaults to the working directory."
                    ),
                    "glob": _property(
                        "string", "Only files whose relative path matches this glob, e.g. '*.py'."
                    ),
                    "ignore_case": _property("boolean", "Match case-insensitively."),
                },
                required=["pattern"],
            ),
            files.search_text,
            read_only=True,
        ),
        Tool(
            "write_file",
            "Create or overwrite a UTF-8 text file in the workspace (parent directories are "
            "created). Asks the user for approval first.",
            _object_schema(
                {
                    "path": _property("string", relative_path),
                    "content": _property("string", "The complete new content."),
                },
                required=["path", "content"],
            ),
            files.write_file,
        ),
        Tool(
            "run_command",
            "Run a bash command in the working directory and return its combined stdout and "
            "stderr with the exit code. Asks the user for approval first. The command is killed "
            "after the timeout.",
            _object_schema(
                {
                    "command": _property("string", "A bash command line.", minLength=1),
                    "timeout_seconds": _property(
                        "number",
                        "Kill the command after this many seconds "
                        f"(default {commands.default_timeout:g}).",
                        exclusiveMinimum=0,
                        maximum=commands.max_timeout,
                    ),
                },
                required=["command"],
            ),
            shell.run_command,
        ),
    )


def _property(json_type: str, description: str, **constraints: Any) -> dict[str, Any]:
    return {"type": json_type, "description": description, **constraints}


def _object_schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema
