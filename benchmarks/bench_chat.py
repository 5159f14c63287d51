"""The chat's performance goals (issue 10), each a ratio against a baseline measured in the same run.

- streaming: fragments per second into the conversation after 1,000 earlier messages, against the
  same with none (goal ≥ 0.9) and against Textual's bare `MarkdownStream` into an empty `Markdown`
  (goal ≥ 0.9);
- typing while a reply streams at full speed: key press → character in the composer, p95 (goal
  ≤ 50 ms);
- start-up: `toolscope chat` to its first frame against a bare Textual app's first frame (goal
  ≤ 1.3), each a fresh interpreter;
- resuming a 10,000-message session to its first frame against an empty chat (goal ≤ 1.5), and
  the peak RSS after scrolling through all of it (goal ≤ 250 MB).

    .venv/bin/python benchmarks/bench_chat.py [--fragments N] [--rounds N] [--phase PHASE ...]

Phases: streaming, keys, first-frame, resume (the resume to first frame, then the peak RSS of a
fresh interpreter scrolling back through all of that session, a window at a time).

The goals are wall-time ratios, as a user waits. Each start's CPU time until its first frame (every
thread of the interpreter) is printed beside them: on a busy machine (the load average is printed at
the start and the end) that ratio is the one that still compares the work done. The starts alternate
(a bare app and the chat, a resume and an empty chat), and a start ratio is the median of the pairs'
ratios: this machine's speed drifts by a third within a minute, and a pair sees one moment of it.

Exits 1 when a goal does not hold.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TOOLSCOPE_HOME", tempfile.mkdtemp(prefix="toolscope-bench-chat-"))
os.environ["TOOLSCOPE_OFFLINE_DELAY"] = "0"

from textual import events  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402
from textual.widgets import Markdown  # noqa: E402

from app.agent.runtime import catalog_from  # noqa: E402
from app.llm.stream import BlockDelta, BlockStart  # noqa: E402
from app.session.view_items import AssistantItem, UserItem  # noqa: E402
from app.ui.app import ChatOptions, ToolscopeApp  # noqa: E402
from app.ui.widgets.conversation.pane import WINDOW, Conversation  # noqa: E402
from benchmarks.sessions import write_large_session  # noqa: E402

SIZE = (120, 40)
FRAGMENT = "Some **streamed** words of a reply, `code` too.\n" 


def _fragments(count: int) -> list[str]:
    """A reply as a model streams one: paragraphs of a few lines with a list item between them.

    Without the paragraph breaks the whole reply would be one growing paragraph, which Markdown
    parses again on every append (quadratic): minutes per run, and no reply looks like that."""
    return [FRAGMENT if n % 8 else "\n\n- a list item\n\n" for n in range(count)]


class _ConversationApp(App[None]):
    def __init__(self, earlier: int) -> None:
        super().__init__()
        self.earlier = earlier

    def compose(self) -> ComposeResult:
        yield Conversation()

    async def on_mount(self) -> None:
        items = []
        for n in range(self.earlier):
            items.append(UserItem(seq=2 * n, id=f"u{n}", text=f"question {n}"))
            items.append(
                AssistantItem(seq=2 * n + 1, turn=n + 1, step=1, route="r", model="m",
                              content=(), usage=None, finish="stop", interrupted=False)
            )
        await self.query_one(Conversation).load(items[: self.earlier])


async def _stream_into_conversation(earlier: int, fragments: list[str]) -> float:
    app = _ConversationApp(earlier)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        conversation = app.query_one(Conversation)
        start = time.perf_counter()
        await conversation.stream(BlockStart(index=0, kind="text"))
        for fragment in fragments:
            await conversation.stream(BlockDelta(index=0, text=fragment))
        reply = conversation._live_reply
        assert reply is not None and reply.widget is not None
        await reply.widget.stop_stream()  # type: ignore[attr-defined]
        await pilot.pause()
        return len(fragments) / (time.perf_counter() - start)


class _BareMarkdownApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Markdown()


async def _stream_into_bare_markdown(fragments: list[str]) -> float:
    app = _BareMarkdownApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        start = time.perf_counter()
        stream = Markdown.get_stream(app.query_one(Markdown))
        for fragment in fragments:
            await stream.write(fragment)
        await stream.stop()
        await pilot.pause()
        return len(fragments) / (time.perf_counter() - start)


async def _key_latencies(keys: int, fragments: list[str]) -> list[float]:
    app = ToolscopeApp(ChatOptions(catalog=catalog_from(None), route_id="offline/demo", cwd=ROOT))
    latencies: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        conversation = app.chat.conversation
        composer = app.chat.composer
        composer.focus()

        async def stream_forever() -> None:
            await conversation.stream(BlockStart(index=0, kind="text"))
            while True:
                for fragment in fragments:
                    await conversation.stream(BlockDelta(index=0, text=fragment))

        streamer = asyncio.create_task(stream_forever())
        await asyncio.sleep(0.2)
        driver = app._driver
        assert driver is not None
        for n in range(keys):
            before = len(composer.text)
            start = time.perf_counter()
            # As the terminal driver delivers a key (`pilot.press` would also wait for the loop
            # to go idle, which it never does while a reply streams at full speed).
            driver.send_message(events.Key("x", "x"))
            while len(composer.text) == before:
                await asyncio.sleep(0)
            latencies.append(time.perf_counter() - start)
            await asyncio.sleep(0.02)  # a fast typist, not a key flood
        streamer.cancel()
    return latencies


FIRST_FRAME = """
import sys
kind = sys.argv[1]


said = []


def painted(app):
    # The first frame is on the screen: say so at once (the parent stops its clock), with the CPU
    # time spent to get there (every thread's), then leave.
    if not said:
        said.append(True)
        import time
        print("painted", time.process_time(), flush=True)
        app.exit()


if kind == "bare":
    from textual.app import App
    from textual.widgets import Static

    class Bare(App):
        def compose(self):
            yield Static("hello")

        def on_ready(self):  # Textual posts Ready right after writing the first frame
            painted(self)

    Bare().run(headless=True, size=(120, 40))
else:
    # Started as a user starts it, `toolscope chat` (app.cli), whose app is swapped for a timed one
    # (headless, at the bench's size) as it is imported: what the CLI does first is timed too.
    from importlib.machinery import PathFinder  # loaded with the interpreter already
    session = sys.argv[2] if len(sys.argv) > 2 else None

    def timed(module):
        class Timed(module.ToolscopeApp):
            def run(self, **_options):
                return super().run(headless=True, size=(120, 40))

            def on_ready(self):
                if session is None:
                    painted(self)

            def _display(self, screen, renderable):
                # Each frame the app renders (headless, it is written nowhere): a resumed chat is
                # painted once a frame shows its blocks filling the view (or all there are). Polling
                # for that instead would lose the race to the tools starting right after the frame.
                super()._display(screen, renderable)
                if session is None or renderable is None or self._batch_count or screen is not self.chat:
                    return
                conversation = self.chat.conversation
                if conversation.children and (
                    conversation.virtual_size.height > conversation.size.height or not conversation.has_earlier
                ):
                    painted(self)

        module.ToolscopeApp = Timed  # what `run_chat` starts

    # A finder needs only `find_spec`: importing `importlib.abc` for its base class charged the timed
    # chat 6 M instructions (0.5 %) of the bench's own.
    class TimeTheApp:
        def find_spec(self, name, path, target=None):
            if name != "app.ui.app":
                return None
            sys.meta_path.remove(self)
            spec = PathFinder.find_spec(name, path)
            load = spec.loader.exec_module

            def exec_module(module):
                load(module)
                timed(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, TimeTheApp())
    from app.cli import main

    sys.exit(main(["chat", "--route", "offline/demo", *(["--session", session] if session else [])]))
"""


# Each fresh interpreter starts as an installed program does, with every module's bytecode cached
# (pip compiles it at install time). Where PYTHONDONTWRITEBYTECODE is set, toolscope's sources
# would otherwise be compiled again at each start while Textual's came compiled: the caches go to a
# folder of the bench's own, written by a first, untimed start of each kind (`_warm_up`).
FIRST_FRAME_ENVIRONMENT = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"} | {
    "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="toolscope-bench-bytecode-")
}


def _warm_up() -> None:
    """Write the bytecode caches (and read every file once) before any start is timed."""
    _first_frame("bare")
    _first_frame("chat")


class Start(NamedTuple):
    wall: float
    cpu: float


def _first_frame(*args: str) -> Start:
    """Wall time from starting a fresh interpreter to its first frame (with the resumed session's
    blocks, when one is given), as a user waits for it, and the CPU time the interpreter spent until
    then (less at the mercy of a busy machine); shutting down is not counted."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", FIRST_FRAME, *args],
        cwd=ROOT,
        env=FIRST_FRAME_ENVIRONMENT,
        stdin=subprocess.DEVNULL,  # the chat must not take the terminal the bench runs in
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    elapsed = time.perf_counter() - start
    process.stdout.read()
    said = line.split()
    if process.wait() != 0 or len(said) != 2 or said[0] != b"painted":
        raise RuntimeError(f"the first-frame script failed ({' '.join(args)})")
    return Start(elapsed, float(said[1]))


async def _scroll_through(session: Path | None) -> int:
    """Resume `session` (or open an empty chat) and scroll back through all of it, a window at a
    time as Home / PageUp would bring it back: every block is mounted once."""
    app = ToolscopeApp(ChatOptions(catalog=catalog_from(None), route_id="offline/demo", session_path=session, cwd=ROOT))
    async with app.run_test(size=SIZE) as pilot:
        if session is not None:
            while not app.chat.conversation.blocks:
                await pilot.pause(0.05)
        conversation = app.chat.conversation
        await pilot.pause()
        while conversation.has_earlier:
            await conversation.show_earlier(WINDOW)
            await pilot.pause()
        await app.workers.wait_for_complete()
        return len(conversation.blocks)


def _peak_rss(session: Path | None) -> tuple[int, float]:
    """Blocks gone through and peak RSS (MB) of a fresh interpreter scrolling through `session`."""
    args = [str(session)] if session is not None else []
    output = subprocess.run(
        [sys.executable, __file__, "--scroll-through", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return int(output[0]), float(output[1])


PHASES = ("streaming", "keys", "first-frame", "resume")


def _seconds(figures: list[float]) -> str:
    return f"{statistics.median(figures):.2f} s (median of {len(figures)})"


def _compared(name: str, runs: list[Start], baseline_name: str, baseline: list[Start], goal: float) -> float:
    """Print the wall-time ratio (the goal's) and the CPU-time ratio of `runs` against `baseline`,
    each the median of the ratios of the starts made one after the other (`runs[i]` beside
    `baseline[i]`): the machine's speed drifts during a run, and a pair sees the same moment of it.
    Return the wall-time ratio."""
    wall = statistics.median(run.wall / base.wall for run, base in zip(runs, baseline, strict=True))
    cpu = statistics.median(run.cpu / base.cpu for run, base in zip(runs, baseline, strict=True))
    print(
        f"{name} {_seconds([run.wall for run in runs])} vs {baseline_name} {_seconds([run.wall for run in baseline])}: "
        f"{wall:.2f}x (goal <= {goal}); CPU time {_seconds([run.cpu for run in runs])} vs "
        f"{_seconds([run.cpu for run in baseline])}: {cpu:.2f}x (medians of the {len(runs)} pairs' ratios)"
    )
    return wall


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # each figure as soon as it is measured
    parser = argparse.ArgumentParser()
    parser.add_argument("--fragments", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keys", type=int, default=60)
    parser.add_argument("--phase", action="append", choices=PHASES, help="run only this phase (repeatable; default: all)")
    parser.add_argument("--scroll-through", nargs="?", const="", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.scroll_through is not None:
        blocks = asyncio.run(_scroll_through(Path(options.scroll_through) if options.scroll_through else None))
        print(blocks, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return 0
    phases = set(options.phase or PHASES)
    fragments = _fragments(options.fragments)
    ok = True
    print(f"load average {os.getloadavg()[0]:.2f}")

    if "streaming" in phases:
        empty, busy, bare = [], [], []
        for _ in range(options.rounds):
            empty.append(asyncio.run(_stream_into_conversation(0, fragments)))
            busy.append(asyncio.run(_stream_into_conversation(1000, fragments)))
            bare.append(asyncio.run(_stream_into_bare_markdown(fragments)))
        fps_empty, fps_busy, fps_bare = (statistics.median(x) for x in (empty, busy, bare))
        print(f"streaming: {fps_busy:.0f} fragments/s after 1,000 messages, {fps_empty:.0f} with none, {fps_bare:.0f} bare MarkdownStream")
        for name, ratio in (("1,000 earlier vs none", fps_busy / fps_empty), ("conversation vs bare MarkdownStream", fps_empty / fps_bare)):
            print(f"  {name}: {ratio:.2f}x (goal >= 0.9)")
            ok = ok and ratio >= 0.9

    if "keys" in phases:
        latencies = sorted(asyncio.run(_key_latencies(options.keys, fragments)))
        p95 = latencies[int(0.95 * (len(latencies) - 1))] * 1000
        print(f"key press -> character while streaming: p95 {p95:.1f} ms, median {statistics.median(latencies) * 1000:.1f} ms (goal p95 <= 50 ms)")
        ok = ok and p95 <= 50

    if phases & {"first-frame", "resume"}:
        _warm_up()
    if "first-frame" in phases:
        # Alternated, so that a busy moment of the machine weighs on both alike.
        bare_frames: list[Start] = []
        chat_frames: list[Start] = []
        for _ in range(options.rounds):
            bare_frames.append(_first_frame("bare"))
            chat_frames.append(_first_frame("chat"))
        ratio = _compared("first frame: toolscope chat", chat_frames, "bare Textual app", bare_frames, 1.3)
        ok = ok and ratio <= 1.3

    if "resume" in phases:
        with tempfile.TemporaryDirectory() as folder:
            session = Path(folder) / "20260101-000000-bench1.jsonl"
            written = write_large_session(session, events=25_000)
            first_open = _first_frame("chat", str(session))  # builds the line index: once per log
            resumed: list[Start] = []
            empty: list[Start] = []
            for _ in range(options.rounds):
                resumed.append(_first_frame("chat", str(session)))
                empty.append(_first_frame("chat"))
            ratio = _compared(f"resume ({written} events) to first frame", resumed, "empty chat", empty, 1.5)
            print(f"  the first open, which indexes the log, {first_open.wall:.2f} s")
            ok = ok and ratio <= 1.5
            blocks, peak = _peak_rss(session)
            _nothing, empty_peak = _peak_rss(None)
            print(
                f"peak RSS after scrolling through {blocks} blocks: {peak:.0f} MB, an empty chat {empty_peak:.0f} MB: "
                f"{peak / empty_peak:.2f}x (goal <= 250 MB)"
            )
            ok = ok and peak <= 250
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
