"""How fast is the DeepSeek translator? `python benchmarks/bench_translator.py [--repeats N]`

One generated DeepSeek stream (~5k chunks: reasoning, text, three parallel tool calls, usage,
`[DONE]`), served as the same bytes to three contenders, timed interleaved in one run:

- ours: the production path — httpx's text decoding and httpx-sse's framing (`EventSource`) over
  the bytes, then `DeepSeekTranslator.feed` per `data:` payload;
- (a) a bare `json.loads` loop over the same `data:` payloads (the floor: parsing alone);
- (b) the openai package's SSE decoder over the same bytes, `ChatCompletionChunk` construction (as
  its client does) and `ChatCompletionStreamState.handle_chunk`.

Goals: ours ≥ 20× faster than (b), and at least 0.3× the speed of (a).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from httpx_sse import EventSource
from openai._models import construct_type
from openai._streaming import SSEDecoder
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.llm.deepseek.translator import DeepSeekTranslator  # noqa: E402
from app.llm.stream import BlockEnd, Finish  # noqa: E402

READ_SIZE = 4096
WORDS = "the a tool call streams 流式 响应 reasoning model answer 🙂 quickly over sockets and".split()


def generate_stream(seed: int = 4) -> tuple[bytes, list[str]]:
    """The stream's bytes and its `data:` payloads: 2000 reasoning, 1500 text and 3 × 500 tool-call
    chunks in DeepSeek's envelope, then the usage chunk and `[DONE]`."""
    rng = random.Random(seed)
    envelope = {
        "id": "0b7c9d2e-5f1a-4e3b-9c8d-7a6b5c4d3e2f",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "deepseek-v4-flash",
        "system_fingerprint": "fp_8802369eaa_prod0623_fp8_kvcache",
    }

    def chunk(delta: dict, finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return json.dumps({**envelope, "choices": [choice]}, ensure_ascii=False)

    def words() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) + " "

    payloads = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    payloads += [chunk({"content": None, "reasoning_content": words()}) for _ in range(2000)]
    payloads += [chunk({"content": words(), "reasoning_content": None}) for _ in range(1500)]
    for call in range(3):
        function = {"name": f"tool_{call}", "arguments": ""}
        head = {"index": call, "id": f"call_0_{call:08x}", "type": "function", "function": function}
        payloads.append(chunk({"content": None, "tool_calls": [head]}))
        for piece in ['{"text": "', *(words() for _ in range(497)), '"}']:
            fragment = {"index": call, "function": {"arguments": piece}}
            payloads.append(chunk({"content": None, "tool_calls": [fragment]}))
    payloads.append(chunk({"content": ""}, "tool_calls"))
    usage = {
        "prompt_tokens": 12000,
        "completion_tokens": 9000,
        "total_tokens": 21000,
        "prompt_cache_hit_tokens": 11000,
        "prompt_cache_miss_tokens": 1000,
        "completion_tokens_details": {"reasoning_tokens": 4000},
    }
    payloads.append(json.dumps({**envelope, "choices": [], "usage": usage}))
    payloads.append("[DONE]")
    body = "".join(f"data: {payload}\n\n" for payload in payloads).encode()
    return body, payloads


def pieces_of(body: bytes) -> list[bytes]:
    """The body as a socket delivers it: fixed-size reads, cutting lines and UTF-8 characters."""
    return [body[i : i + READ_SIZE] for i in range(0, len(body), READ_SIZE)]


Calls = list[tuple[str | None, str | None, str | None]]


def run_ours(pieces: list[bytes]) -> Calls:
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(pieces))
    translator = DeepSeekTranslator()
    for sse in EventSource(response).iter_sse():
        events = translator.feed(sse.data)
        if translator.finished:
            assert events[-1] == Finish("tool-calls"), events[-1]
            # Calls close together at [DONE], so the last batch has them all.
            return [(e.call_id, e.name, e.arguments) for e in events if isinstance(e, BlockEnd) and e.call_id]
    raise AssertionError("the stream did not finish")


def run_json(payloads: list[str]) -> int:
    loads = json.loads
    count = 0
    for data in payloads:
        if data != "[DONE]":
            loads(data)
            count += 1
    return count


def run_openai(pieces: list[bytes]) -> Calls:
    state: ChatCompletionStreamState = ChatCompletionStreamState()
    for sse in SSEDecoder().iter_bytes(iter(pieces)):
        if sse.data.startswith("[DONE]"):
            break
        # What the openai client does per event (`_process_response_data` without strict validation).
        chunk = construct_type(type_=ChatCompletionChunk, value=json.loads(sse.data))
        state.handle_chunk(chunk)  # type: ignore[arg-type]
    calls = state.get_final_completion().choices[0].message.tool_calls or []
    return [(c.id, c.function.name, c.function.arguments) for c in calls]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    body, payloads = generate_stream()
    pieces = pieces_of(body)
    calls = run_ours(pieces)
    assert len(calls) == 3 and calls == run_openai(pieces), "the contenders must assemble the same calls"
    contenders: dict[str, Callable[[], object]] = {
        "ours: httpx-sse + DeepSeekTranslator": lambda: run_ours(pieces),
        "(a) bare json.loads over data lines": lambda: run_json(payloads),
        "(b) openai SSEDecoder + ChatCompletionStreamState": lambda: run_openai(pieces),
    }
    timings: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.repeats):
        for name, run in contenders.items():  # interleaved: drift in machine load hits all alike
            started = time.perf_counter()
            run()
            timings[name].append(time.perf_counter() - started)

    chunks = len(payloads) - 1
    print(f"stream: {chunks} chunks, {len(body)} bytes in {len(pieces)} reads; {args.repeats} repeats")
    for name, times in timings.items():
        best, median = min(times), statistics.median(times)
        per_chunk = best / chunks * 1e6
        print(f"  {name:52} best {best * 1e3:8.2f} ms  median {median * 1e3:8.2f} ms  ({per_chunk:.2f} µs/chunk)")
    ours, bare, openai = (min(timings[name]) for name in contenders)
    ours_m, bare_m, openai_m = (statistics.median(timings[name]) for name in contenders)
    print(f"  ours vs (b): {openai / ours:.1f}× faster (median {openai_m / ours_m:.1f}×)   goal ≥ 20×")
    print(f"  ours vs (a): {bare / ours:.2f}× its speed (median {bare_m / ours_m:.2f}×)   goal ≥ 0.3×")
    return 0 if openai / ours >= 20 and bare / ours >= 0.3 else 1


if __name__ == "__main__":
    sys.exit(main())
