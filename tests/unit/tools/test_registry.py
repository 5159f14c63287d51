"""The registry: ordering across sources, unique names, execute's error codes, change notices."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from app.tools.approval import AutoApprover
from app.tools.registry import ToolRegistry, ToolSwitches
from app.tools.source_state import Plugin, ProblemKind, ServerState, ServerStatus, SourceProblem, UnknownPluginError
from app.tools.tool import OutputLimits, Tool, ToolContext, ToolErrorCode, ToolFailure

pytestmark = pytest.mark.anyio

CONTEXT = ToolContext(AutoApprover(approve_all=False), call_id="c1")
OBJECT = {"type": "object", "properties": {}, "additionalProperties": False}


def make_tool(name: str, result: str = "ok", *, read_only: bool = False, parameters=None) -> Tool:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        return result

    return Tool(name, f"the {name} tool", parameters or OBJECT, handler, read_only=read_only)


def raising_tool(name: str, exc: Exception) -> Tool:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        raise exc

    return Tool(name, "raises", OBJECT, handler)


class FakeServer:
    """A managed source whose tools the test sets directly."""

    def __init__(self, name: str, *names: str) -> None:
        self.name = name
        self.tool_prefix = f"{name}__"
        self._tools = tuple(make_tool(n) for n in names)
        self.settled = 0
        self.running = False
        self._changed: Callable[[], None] = lambda: None

    def tools(self) -> tuple[Tool, ...]:
        return self._tools

    def last_seen(self) -> None:
        return None

    def bind(self, on_tools_changed, on_problem) -> None:
        self._changed = on_tools_changed

    def set_tools(self, *names: str) -> None:
        self._tools = tuple(make_tool(n) for n in names)
        self._changed()

    async def start(self) -> None:
        self.running = True

    async def stop(self) -> None:
        self.running = False

    async def settle(self) -> None:
        self.settled += 1

    def status(self) -> ServerStatus:
        return ServerStatus(self.name, ServerState.RUNNING, tuple(t.name for t in self._tools))


def names(registry: ToolRegistry) -> list[str]:
    return [definition.name for definition in registry.definitions()]


def plugin(name: str, *tool_names: str) -> Plugin:
    return Plugin(name, name.title(), f"{name} plugin", tuple(make_tool(n) for n in tool_names))


def test_order_is_builtins_then_plugins_in_config_order_then_servers_in_config_order():
    registry = ToolRegistry(
        builtins=[make_tool("read"), make_tool("write")],
        plugins=[plugin("alpha", "a1", "a2"), plugin("beta", "b1"), plugin("gamma", "g1")],
        enabled_plugins=["gamma", "alpha"],
        mcp_servers=[FakeServer("s2", "s2__x"), FakeServer("s1", "s1__y", "s1__z")],
    )
    assert names(registry) == ["read", "write", "g1", "a1", "a2", "s2__x", "s1__y", "s1__z"]

    # A plugin the configuration did not name joins after the configured ones, in catalog order,
    # and keeps that place however often it is toggled.
    registry.enable_plugin("beta")
    assert names(registry) == ["read", "write", "g1", "a1", "a2", "b1", "s2__x", "s1__y", "s1__z"]
    registry.disable_plugin("alpha")
    registry.enable_plugin("alpha")
    assert names(registry) == ["read", "write", "g1", "a1", "a2", "b1", "s2__x", "s1__y", "s1__z"]


def test_definitions_carry_name_description_and_parameters():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    registry = ToolRegistry(builtins=[make_tool("count", parameters=schema)])
    (definition,) = registry.definitions()
    assert definition.to_json() == {"name": "count", "description": "the count tool", "parameters": schema}


def test_a_clash_keeps_the_earlier_source_and_reports_the_later_once():
    server = FakeServer("srv", "read", "srv__ok")
    registry = ToolRegistry(builtins=[make_tool("read", "builtin")], mcp_servers=[server])
    assert names(registry) == ["read", "srv__ok"]
    server.set_tools("read", "srv__ok", "srv__new")
    duplicates = [p for p in registry.problems() if p.kind is ProblemKind.DUPLICATE_TOOL]
    assert duplicates == [SourceProblem(ProblemKind.DUPLICATE_TOOL, "srv", tool="read")]
    assert "read" in duplicates[0].message()


async def test_the_earlier_tool_is_the_one_that_runs_on_a_clash():
    registry = ToolRegistry(builtins=[make_tool("read", "builtin")], mcp_servers=[FakeServer("s", "read")])
    assert (await registry.execute("read", "{}", CONTEXT)).content == "builtin"


def test_tool_names_must_match_the_provider_pattern():
    for bad in ("", "has space", "dot.ted", "x" * 65, "ünï"):
        with pytest.raises(ValueError):
            make_tool(bad)
    make_tool("ok_name-1")


async def test_a_name_not_in_the_current_registry_is_unknown_even_if_it_existed():
    server = FakeServer("srv", "srv__gone", "srv__kept")
    registry = ToolRegistry(mcp_servers=[server])
    assert not (await registry.execute("srv__gone", "{}", CONTEXT)).is_error
    server.set_tools("srv__kept")

    outcome = await registry.execute("srv__gone", "{}", CONTEXT)
    assert outcome.is_error
    assert outcome.error_code == ToolErrorCode.UNKNOWN_TOOL
    assert "no longer available" in (outcome.error_message or "")

    never = await registry.execute("never_was", "{}", CONTEXT)
    assert never.error_code == ToolErrorCode.UNKNOWN_TOOL
    assert "unknown tool" in never.content


async def test_a_disabled_plugin_tool_is_unknown():
    registry = ToolRegistry(plugins=[plugin("p", "ptool")], enabled_plugins=["p"])
    registry.disable_plugin("p")
    assert (await registry.execute("ptool", "{}", CONTEXT)).error_code == ToolErrorCode.UNKNOWN_TOOL


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"text"', "must be a JSON object"),
        ("{}", "'n' is a required property"),
        ('{"n": "three"}', "at n: 'three' is not of type 'integer'"),
        ('{"n": 3, "extra": true}', "Additional properties"),
    ],
)
async def test_bad_json_and_schema_violations_are_invalid_arguments(arguments, fragment):
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    registry = ToolRegistry(builtins=[make_tool("count", parameters=schema)])
    outcome = await registry.execute("count", arguments, CONTEXT)
    assert outcome.is_error
    assert outcome.error_code == ToolErrorCode.INVALID_ARGUMENTS
    assert fragment in outcome.content


async def test_empty_arguments_mean_an_empty_object():
    registry = ToolRegistry(builtins=[make_tool("noargs")])
    assert (await registry.execute("noargs", "", CONTEXT)).content == "ok"


async def test_a_raising_tool_fails_with_its_message_and_no_traceback():
    registry = ToolRegistry(builtins=[raising_tool("boom", RuntimeError("the flux capacitor broke"))])
    outcome = await registry.execute("boom", "{}", CONTEXT)
    assert outcome.is_error
    assert outcome.error_code == ToolErrorCode.TOOL_FAILED
    assert "RuntimeError: the flux capacitor broke" in outcome.content
    assert "Traceback" not in outcome.content
    assert 'File "' not in outcome.content


async def test_a_tool_failure_keeps_its_code_message_and_content():
    failure = ToolFailure(ToolErrorCode.COMMAND_FAILED, "exit code 2", "the output\n[exit code 2]")
    registry = ToolRegistry(builtins=[raising_tool("cmd", failure)])
    outcome = await registry.execute("cmd", "{}", CONTEXT)
    assert (outcome.content, outcome.is_error, outcome.error_code, outcome.error_message) == (
        "the output\n[exit code 2]",
        True,
        "COMMAND_FAILED",
        "exit code 2",
    )


async def test_every_result_is_bounded_with_a_notice():
    registry = ToolRegistry(
        builtins=[make_tool("loud", "line\n" * 50)], limits=OutputLimits(max_bytes=10_000, max_lines=10)
    )
    outcome = await registry.execute("loud", "{}", CONTEXT)
    assert outcome.content == "line\n" * 9 + "[output truncated to 10 lines / 10000 bytes]"


def test_read_only_flags():
    registry = ToolRegistry(builtins=[make_tool("look", read_only=True), make_tool("touch")])
    assert registry.is_read_only("look")
    assert not registry.is_read_only("touch")
    assert not registry.is_read_only("missing")


def test_on_change_fires_once_per_real_change_and_can_be_unsubscribed():
    server = FakeServer("srv", "srv__a")
    registry = ToolRegistry(plugins=[plugin("p", "ptool")], mcp_servers=[server])
    seen: list[list[str]] = []
    unsubscribe = registry.on_change(lambda definitions: seen.append([d.name for d in definitions]))

    registry.enable_plugin("p")
    registry.enable_plugin("p")  # no change, no notice
    server.set_tools("srv__a")  # same definitions, no notice
    server.set_tools("srv__a", "srv__b")
    registry.disable_plugin("p")
    assert seen == [["ptool", "srv__a"], ["ptool", "srv__a", "srv__b"], ["srv__a", "srv__b"]]

    unsubscribe()
    registry.enable_plugin("p")
    assert len(seen) == 3


def test_a_failing_listener_does_not_stop_the_others():
    registry = ToolRegistry(plugins=[plugin("p", "ptool")])
    seen = []
    registry.on_change(lambda definitions: 1 / 0)
    registry.on_change(lambda definitions: seen.append(len(definitions)))
    registry.enable_plugin("p")
    assert seen == [1]


def test_unknown_plugins_are_reported_or_refused():
    registry = ToolRegistry(plugins=[plugin("p", "ptool")], enabled_plugins=["nope", "p"])
    assert names(registry) == ["ptool"]
    assert registry.problems() == (SourceProblem(ProblemKind.UNKNOWN_PLUGIN, "nope"),)
    with pytest.raises(UnknownPluginError):
        registry.enable_plugin("nope")


def test_plugin_states():
    registry = ToolRegistry(plugins=[plugin("p", "t1", "t2"), plugin("q", "t3")], enabled_plugins=["q"])
    states = {state.name: state for state in registry.plugins()}
    assert [state.name for state in registry.plugins()] == ["q", "p"]
    assert states["q"].enabled and not states["p"].enabled
    assert states["p"].tool_names == ("t1", "t2")
    assert states["p"].title == "P"


def test_each_source_lists_its_own_tools_whether_effective_or_not():
    registry = ToolRegistry(
        builtins=[make_tool("read")],
        plugins=[plugin("p", "t1", "read")],
        mcp_servers=[FakeServer("s", "s__x")],
    )
    assert [d.name for d in registry.builtin_definitions()] == ["read"]
    assert [d.name for d in registry.plugin_definitions("p")] == ["t1", "read"]  # off, and clashing
    assert [d.name for d in registry.server_definitions("s")] == ["s__x"]
    assert registry.server_definitions("s")[0].description == "the s__x tool"
    with pytest.raises(UnknownPluginError):
        registry.plugin_definitions("missing")
    with pytest.raises(LookupError):
        registry.server_definitions("missing")


async def test_settle_waits_for_every_server():
    servers = [FakeServer("a"), FakeServer("b")]
    registry = ToolRegistry(mcp_servers=servers)
    await registry.settle()
    assert [server.settled for server in servers] == [1, 1]


def test_mcp_server_statuses_and_lookup():
    registry = ToolRegistry(mcp_servers=[FakeServer("a", "a__x")])
    assert registry.mcp_servers() == (ServerStatus("a", ServerState.RUNNING, ("a__x",)),)
    with pytest.raises(LookupError):
        anyio.run(registry.start_mcp_server, "missing")


def test_two_servers_may_not_share_a_name():
    with pytest.raises(ValueError):
        ToolRegistry(mcp_servers=[FakeServer("a"), FakeServer("a")])


def test_every_problem_kind_has_a_message():
    for kind in ProblemKind:
        problem = SourceProblem(kind, "src", detail="details here", tool="t", attempt=1, max_attempts=3, delay=2.0)
        message = problem.message()
        assert "src" in message and message.endswith("details here")


def test_outcome_content_is_json_safe():
    # The loop writes outcomes into JSONL: make sure the error codes serialise as plain strings.
    failure = ToolFailure(ToolErrorCode.TOOL_FAILED, "x").outcome()
    assert json.loads(json.dumps({"code": failure.error_code})) == {"code": "TOOL_FAILED"}


# --- switches ------------------------------------------------------------------------------------


def test_a_headers_tools_name_the_sources_that_were_switched_on():
    registry = ToolRegistry(
        plugins=[plugin("alpha", "a1", "a2"), plugin("beta", "b1")],
        mcp_servers=[FakeServer("s"), FakeServer("s__x"), FakeServer("idle")],
    )
    logged = [make_tool(name).definition for name in ("read", "a2", "s__x__t", "s__y", "gone__z")]
    # `s__x__t` fits both `s__` and `s__x__`: the longer prefix is the server that listed it.
    assert registry.switches_in(logged) == ToolSwitches(frozenset({"alpha"}), frozenset({"s", "s__x"}))
    assert registry.switches_in([]) == ToolSwitches()


async def test_servers_switched_off_in_the_config_are_not_started():
    on, off = FakeServer("on", "on__t"), FakeServer("off", "off__t")
    registry = ToolRegistry(mcp_servers=[on, off], servers_off=["off"])
    await registry.start()
    assert (on.running, off.running) == (True, False)
    assert registry.switches().servers == {"on"}
    await registry.start_mcp_server("off")
    assert off.running and registry.switches().servers == {"on", "off"}


async def test_applied_switches_choose_what_start_starts_and_later_start_and_stop_servers():
    one, two = FakeServer("one", "one__t"), FakeServer("two", "two__t")
    registry = ToolRegistry(plugins=[plugin("alpha", "a1")], mcp_servers=[one, two], servers_off=["two"])
    await registry.apply_switches(ToolSwitches(frozenset({"alpha", "unknown"}), frozenset({"two"})))
    assert (one.running, two.running) == (False, False)  # before start(), nothing starts yet
    await registry.start()
    assert (one.running, two.running) == (False, True)
    assert registry.switches() == ToolSwitches(frozenset({"alpha"}), frozenset({"two"}))

    await registry.apply_switches(ToolSwitches(servers=frozenset({"one"})))
    assert (one.running, two.running) == (True, False)
    assert registry.switches() == ToolSwitches(servers=frozenset({"one"}))
    assert "a1" not in names(registry)
