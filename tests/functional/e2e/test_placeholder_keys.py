"""Placeholder keys end to end (issue 23 item 2, docs/security.md "The API key").

Local servers accept any key, and users write `k`, `EMPTY`, `ollama`, `sk-no-key-required`. Such a
value is no secret: it must change no output. Each key gets one real `toolscope run` against the
loopback model with the real MCP server named after the key, so every tool name, every call id and
the answer hold it: the swap goes through (`tools/list_changed` → a changed header → one developer
message), names and ids come back as sent, and `[redacted]` appears nowhere. A real 51-character
key is protected as before: no run of 12 of its characters reaches the log, stdout, stderr,
`inspect` or any export, its call ids are replaced by fresh ones and the call whose name holds it
fails as `UNKNOWN_TOOL` under the name `[redacted]`, while every other tool name stays whole.

`inspect` and the three exports run in-process (`app.cli.main`, what the console script calls),
writing real files, so each key costs one subprocess.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from app import cli
from app.agent.notices import tool_change_notice
from app.redaction import REDACTED
from tests.functional.e2e.harness import (
    KEY_ENV,
    RouteSpec,
    Workbench,
    answer,
    calls,
    events_of,
    of_type,
    request_bodies,
    run,
    tool_call_frames,
    toolscope_run,
)
from tests.functional.llm.sse_server import Reply, SSEServer

LONG_KEY = "sk-4f9QbX2mLp7RzT1vKc8WnY3eHd6JsA0uGi5oVrBqZxMtNyPw"
FRAGMENT = 12
KEYS = {
    # key: the MCP server's name, so that its tools are `<name>__…`
    "k": "k",
    "EMPTY": "EMPTY",
    "ollama": "ollama",
    "sk-no-key-required": "sk-no-key-required",
    LONG_KEY: "lab",
}
FRESH_ID = re.compile(r"call-[0-9a-f]{12}")
"""The form of the id the agent loop gives a call whose provider id it cannot use."""


pytestmark = pytest.mark.usefixtures("english")


def replies(key: str, server: str) -> tuple[Reply, ...]:
    swap = (f"call-{key}", f"{server}__swap_tools", "{}")
    late = (f"late-{key}", f"{server}__late", '{"n": 21}')
    ghost = (f"ghost-{key}", f"{server}__{key}", "{}")
    return (
        Reply(pieces=tool_call_frames(swap, preface=f"Unlocking with {key}.")),
        calls(late, ghost),
        answer(f"Done with {key}: 42."),
    )


def key_leaks(key: str, output: str) -> list[str]:
    """Runs of 12 characters of `key` in `output`, also across whitespace and JSON's `\\n`."""
    joined = re.sub(r"\s|\\n|\\r|\\t", "", output)
    runs = {key[i : i + FRAGMENT] for i in range(len(key) - FRAGMENT + 1)}
    return sorted(piece for piece in runs if piece in output or piece in joined)


def in_process(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--lang", "en", *args])
    assert code == 0, err.getvalue()
    return out.getvalue()


def reports(bench: Workbench, key: str, session: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """`inspect`, `inspect --json` and the three exports of `session`, with the key in the
    environment as the run had it."""
    for name, value in bench.environment(**{KEY_ENV: key}).items():
        monkeypatch.setenv(name, value)
    shown = {"inspect": in_process("inspect", str(session)), "inspect --json": in_process("inspect", "--json", str(session))}
    for fmt in ("md", "html", "json"):
        target = bench.root / f"export.{fmt}"
        in_process("export", str(session), "--format", fmt, "-o", str(target))
        shown[f"export {fmt}"] = target.read_text(encoding="utf-8")
    return shown


@pytest.mark.timeout(90)
@pytest.mark.parametrize("key", list(KEYS), ids=["k", "EMPTY", "ollama", "sk-no-key-required", "51-characters"])
def test_a_placeholder_key_changes_nothing_and_a_real_one_never_shows(
    bench: Workbench, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_name = KEYS[key]
    secret = key == LONG_KEY

    async def scenario() -> tuple[object, SSEServer]:
        async with SSEServer(*replies(key, server_name)) as server:
            bench.write_config(server.base_url, [RouteSpec("e2e/local")], mcp_relist_delay=0.2, mcp_server=server_name)
            result = await toolscope_run(bench, "Unlock the lab.", env={KEY_ENV: key})
        return result, server

    result, server = run(scenario())
    assert result.returncode == 0, result.stderr
    session = bench.only_session()
    events = events_of(session)

    # The MCP server's tool change went through: one changed header, one developer message.
    assert [header.data.reason for header in of_type(events, "request/header")] == ["initial", "change"]
    (update,) = of_type(events, "developer/message")
    assert [addition.name for addition in update.data.additions] == [f"{server_name}__late"]
    assert update.data.removals == (f"{server_name}__echo",)
    assert "\n".join(tool_change_notice(update.data).lines()) in result.stderr

    # Every tool name comes back whole; only a name holding a real key is replaced, whole.
    logged = [(event.data.name, event.data.call_id) for event in of_type(events, "tool/call")]
    ghost = REDACTED if secret else f"{server_name}__{key}"
    assert [name for name, _ in logged] == [f"{server_name}__swap_tools", f"{server_name}__late", ghost]
    ids = [call_id for _, call_id in logged]
    if secret:
        assert all(FRESH_ID.fullmatch(call_id) for call_id in ids) and len(set(ids)) == 3, ids
    else:
        assert ids == [f"call-{key}", f"late-{key}", f"ghost-{key}"]
    results = {event.data.call_id: event.data for event in of_type(events, "tool/result")}
    assert [results[call_id].is_error for call_id in ids] == [False, False, True]
    assert results[ids[2]].error is not None and results[ids[2]].error.code == "UNKNOWN_TOOL"
    assert of_type(events, "turn/end")[-1].data.reason == "completed"
    # The provider is answered under the ids the log has.
    last = request_bodies(server)[-1]
    assert [message["tool_call_id"] for message in last["messages"] if message["role"] == "tool"] == ids

    shown = {"log": session.read_text(encoding="utf-8"), "stdout": result.stdout, "stderr": result.stderr}
    shown |= reports(bench, key, session, monkeypatch)
    if secret:
        assert f"Done with {REDACTED}: 42." in result.stdout
        for where, output in shown.items():
            assert not key_leaks(key, output), f"the key leaked in {where}"
    else:
        assert f"Done with {key}: 42." in result.stdout
        for where, output in shown.items():
            assert REDACTED not in output, f"{where} was rewritten"
        for where in ("log", "export md", "export json"):
            assert f"Unlocking with {key}." in shown[where] and f"{server_name}__{key}" in shown[where], where
    for where in ("export md", "export html", "export json"):
        assert f"{server_name}__late" in shown[where] and f"{server_name}__swap_tools" in shown[where], where
    assert json.loads(shown["inspect --json"])["session"] == session.stem
