"""The last-seen tool lists are a cache read from a file anyone may have written: what it gives is
exactly what the writer was given, or nothing — never another list.

The reference is the list the writer was handed (what a rebuild, listing the server again, gives);
the file is respelled, damaged, replaced by foreign JSON, a FIFO, a symlink, and read back.
"""

from __future__ import annotations

import json
import os
import random
import threading
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.session.events import ToolDefinition
from app.tools.seen_tools import SeenTools, SeenToolsStore, server_identity

SERVER = "lab"
PREFIX = "lab__"
IDENTITY = server_identity("stdio", "python", ["server.py"], "/work")
WHEN = datetime(2026, 12, 3, 14, 5, 9, tzinfo=UTC)

json_leaf = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
tool_lists = st.lists(
    st.builds(
        lambda name, description, parameters: ToolDefinition(
            name=PREFIX + name, description=description, parameters=parameters
        ),
        st.text(alphabet="abcdefghij_-0123", min_size=1, max_size=10),
        st.text(max_size=30),
        st.dictionaries(st.text(max_size=6), json_value, max_size=3),
    ),
    max_size=5,
    unique_by=lambda tool: tool.name,
)


def written(path: Path, tools: list[ToolDefinition], *, server: str = SERVER) -> SeenToolsStore:
    store = SeenToolsStore(path)
    store.remember(server, IDENTITY, tools, WHEN)
    return store


def read_back(path: Path, *, server: str = SERVER, identity: str = IDENTITY) -> SeenTools | None:
    return SeenToolsStore(path).last_seen(server, identity, PREFIX)


def respelled(text: str, rng: random.Random) -> str:
    """The same JSON value in another spelling: key order, spacing, escapes."""

    def shuffled(value):  # type: ignore[no-untyped-def]
        if isinstance(value, dict):
            items = list(value.items())
            rng.shuffle(items)
            return {key: shuffled(item) for key, item in items}
        if isinstance(value, list):
            return [shuffled(item) for item in value]
        return value

    return json.dumps(
        shuffled(json.loads(text)),
        ensure_ascii=rng.random() < 0.5,
        indent=rng.choice([None, 0, 2, "\t"]),
        separators=rng.choice([None, (",", ":"), (" ,", " : ")]),
    )


@settings(max_examples=120, deadline=None)
@given(tools=tool_lists, seed=st.integers(0, 2**32))
def test_a_respelled_file_gives_the_same_tools(tmp_path_factory, tools, seed) -> None:
    path = tmp_path_factory.mktemp("seen") / "mcp-tools.json"
    written(path, tools)
    path.write_text(respelled(path.read_text("utf-8"), random.Random(seed)), "utf-8")
    assert read_back(path) == SeenTools(tuple(tools), WHEN)


@settings(max_examples=300, deadline=None)
@given(tools=tool_lists, seed=st.integers(0, 2**32), damage=st.sampled_from(["cut", "flip", "insert", "drop"]))
def test_a_damaged_file_gives_the_same_tools_or_none(tmp_path_factory, tools, seed, damage) -> None:
    path = tmp_path_factory.mktemp("seen") / "mcp-tools.json"
    written(path, tools)
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    at = rng.randrange(len(data))
    match damage:
        case "cut":
            del data[at:]
        case "flip":
            data[at] ^= 1 << rng.randrange(8)
        case "insert":
            data[at:at] = rng.choice([b"0", b"\"", b"x", b",", b"}", b"\\u0000", b" "])
        case "drop":
            del data[at]
    path.write_bytes(bytes(data))
    assert read_back(path) in (None, SeenTools(tuple(tools), WHEN))
    # The next listing writes the file again, without what did not check out.
    written(path, tools[:1])
    assert read_back(path) == SeenTools(tuple(tools[:1]), WHEN)


@settings(max_examples=200, deadline=None)
@given(document=json_value | st.dictionaries(st.sampled_from(["format", "servers"]), json_value))
def test_foreign_json_gives_none(tmp_path_factory, document) -> None:
    path = tmp_path_factory.mktemp("seen") / "mcp-tools.json"
    path.write_text(json.dumps(document), "utf-8")
    assert read_back(path) is None


def entry_edits() -> list[tuple[str, object]]:
    """Edits of one entry that keep it well-formed JSON but change what it says."""
    return [
        ("the description", lambda entry: entry["tools"][0].update(description="other")),
        ("a tool dropped", lambda entry: entry["tools"].pop()),
        ("a foreign tool name", lambda entry: entry["tools"][0].update(name="other__tool")),
        ("the bare prefix as a name", lambda entry: entry["tools"][0].update(name=PREFIX)),
        ("the identity", lambda entry: entry.update(identity="0" * 64)),
        ("the time", lambda entry: entry.update(seen_at="2026-12-03T14:05:10Z")),
        ("an extra key", lambda entry: entry.update(extra=1)),
        ("the digest", lambda entry: entry.update(digest=entry["digest"].upper())),
        ("a digest in other letters", lambda entry: entry.update(digest="é" * 32)),
        ("a digest that is no string", lambda entry: entry.update(digest=None)),
    ]


def test_every_edit_of_what_an_entry_says_drops_it(tmp_path) -> None:
    tools = [
        ToolDefinition(name="lab__echo", description="Echo", parameters={"type": "object"}),
        ToolDefinition(name="lab__late", description="Late", parameters={}),
    ]
    for label, edit in entry_edits():
        path = tmp_path / f"{len(label)}-{label}.json"
        written(path, tools)
        document = json.loads(path.read_text("utf-8"))
        edit(document["servers"][SERVER])  # type: ignore[operator]
        path.write_text(json.dumps(document), "utf-8")
        assert read_back(path) is None, label


def test_the_format_must_be_the_integer_one(tmp_path) -> None:
    path = tmp_path / "mcp-tools.json"
    written(path, [])
    text = path.read_text("utf-8")
    assert read_back(path) == SeenTools((), WHEN)
    for spelling in ("1.0", "true", '"1"', "2"):
        path.write_text(text.replace('"format": 1', f'"format": {spelling}'), "utf-8")
        assert read_back(path) is None, spelling


def test_a_key_spelled_twice_drops_the_file(tmp_path) -> None:
    path = tmp_path / "mcp-tools.json"
    written(path, [ToolDefinition(name="lab__echo", description="Echo", parameters={})])
    text = path.read_text("utf-8")
    path.write_text(text.replace('"identity":', '"identity": "x", "identity":', 1), "utf-8")
    assert read_back(path) is None


def test_another_server_or_another_command_sees_nothing(tmp_path) -> None:
    path = tmp_path / "mcp-tools.json"
    written(path, [ToolDefinition(name="lab__echo", description="Echo", parameters={})])
    assert read_back(path, server="other") is None
    assert read_back(path, identity=server_identity("stdio", "python", ["server.py", "--v2"], "/work")) is None


def test_a_file_written_under_another_accounts_key_gives_none(tmp_path, monkeypatch) -> None:
    path = tmp_path / "mcp-tools.json"
    written(path, [ToolDefinition(name="lab__echo", description="Echo", parameters={})])
    assert read_back(path) is not None
    monkeypatch.setenv("TOOLSCOPE_HOME", str(tmp_path / "another-account"))
    assert read_back(path) is None


def test_the_file_is_private_and_holds_no_argument(tmp_path) -> None:
    path = tmp_path / "home" / "mcp-tools.json"
    identity = server_identity("stdio", "server", ["--api-key", "sk-very-secret-value"], "/work")
    SeenToolsStore(path).remember(SERVER, identity, [], WHEN)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert "sk-very-secret-value" not in path.read_text("utf-8")


def test_a_fifo_symlink_directory_or_huge_file_in_its_place_gives_none_without_waiting(tmp_path) -> None:
    real = tmp_path / "real.json"
    written(real, [ToolDefinition(name="lab__echo", description="Echo", parameters={})])
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    directory = tmp_path / "dir.json"
    directory.mkdir()
    huge = tmp_path / "huge.json"
    with huge.open("wb") as file:
        file.truncate(17 * 1024 * 1024)
    for path in (fifo, link, directory, huge, tmp_path / "missing.json"):
        result: list[SeenTools | None] = []
        reader = threading.Thread(target=lambda: result.append(read_back(path)), daemon=True)
        reader.start()
        reader.join(timeout=5)
        assert result == [None], path.name
    # Writing replaces the symlink itself, not the file it points at.
    written(link, [])
    assert not link.is_symlink() and read_back(real) is not None
