"""Commands in one place (issue 25 item 2): every command `toolscope --help` lists is parsed and
handled by its own module of `app/commands/`, and the exit codes every command returns are defined
once, in `app/commands/__init__.py`.

The commands are read from the real console script's help, so a new command cannot be added
without a module of its own (nor this test told about it).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import app
from app.cli import _build_parser

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
APP = Path(app.__file__).parent
REQUIRED = {"inspect": ["S"], "cost": ["S"], "export": ["S", "--format", "md"], "sessions rm": ["ID"]}
"""What a command cannot be parsed without."""


def listed_commands(*command: str) -> list[str]:
    """The command names the help of `toolscope COMMAND…` lists under "commands:"."""
    result = subprocess.run(
        [str(TOOLSCOPE), "--lang", "en", *command, "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    section = result.stdout.split("\ncommands:\n", 1)[1]
    names = []
    for line in section.splitlines():
        match = re.match(r"    (\w+)", line)
        if match:
            names.append(match.group(1))
        elif line and not line.startswith("  "):
            break
    return names


def test_every_command_is_parsed_and_handled_by_its_own_module() -> None:
    commands = listed_commands()
    assert commands == ["chat", "sessions", "inspect", "cost", "run", "routes", "export", "view"]
    parser = _build_parser()
    for name in commands:
        options = parser.parse_args([name, *REQUIRED.get(name, [])])
        assert options.handler.__module__ == f"app.commands.{name}", name
    assert listed_commands("sessions") == ["rm"]
    options = parser.parse_args(["sessions", "rm", *REQUIRED["sessions rm"]])
    assert options.handler.__module__ == "app.commands.sessions"


def test_the_exit_codes_are_defined_once() -> None:
    defined = {}
    for path in sorted(APP.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                if isinstance(target, ast.Name) and target.id.startswith("EXIT_"):
                    defined.setdefault(target.id, []).append(str(path.relative_to(APP.parent)))
    where = "app/commands/__init__.py"
    assert defined == {
        "EXIT_OK": [where], "EXIT_FAILURE": [where], "EXIT_USAGE": [where], "EXIT_INTERRUPTED": [where]
    }  # fmt: skip
