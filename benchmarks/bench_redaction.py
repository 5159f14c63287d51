"""What does key redaction cost a stream? `python benchmarks/bench_redaction.py [--repeats N]`

Every event an adapter yields passes `KeyRedactor` (`app/llm/redact.py`). One generated DeepSeek
stream (the translator benchmark's: ~5k chunks of reasoning, text and three tool calls) is
translated by `DeepSeekTranslator`, then its events go through the redactor with a 51-character
key; the baseline is the translation alone, timed interleaved in the same run.

Goal: redaction costs at most the translator's own time (it runs on every event the translator
makes, so the stream path at most doubles; at ~10 µs an event that is far below any provider's pace).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.llm.deepseek.translator import DeepSeekTranslator  # noqa: E402
from app.llm.redact import KeyRedactor  # noqa: E402
from app.llm.stream import StreamEvent  # noqa: E402
from benchmarks.bench_translator import generate_stream  # noqa: E402

KEY = "sk-7Qm2ZpR4xW9tLk3VbN8cYd5Hf6Gj1Ks0Lq2Mw3Ne4Rt5Yu6Ii"
GOAL = 1.0


def translate(payloads: list[str]) -> list[StreamEvent]:
    translator = DeepSeekTranslator()
    return [event for payload in payloads for event in translator.feed(payload)]


def redact(events: list[StreamEvent]) -> int:
    redactor = KeyRedactor(KEY)
    return sum(len(redactor.feed(event)) for event in events)


def timed(action: object, argument: object) -> float:
    start = time.perf_counter()
    action(argument)  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    _body, payloads = generate_stream()
    events = translate(payloads)
    translation, redaction = [], []
    for _ in range(args.repeats):
        translation.append(timed(translate, payloads))
        redaction.append(timed(redact, events))
    ratio = statistics.median(redaction) / statistics.median(translation)
    print(f"stream: {len(payloads)} chunks, {len(events)} events; {args.repeats} repeats")
    print(f"  translation             median {statistics.median(translation) * 1e3:8.2f} ms")
    print(f"  redaction (51-char key) median {statistics.median(redaction) * 1e3:8.2f} ms")
    print(f"  redaction / translation: {ratio:.2f}×   goal ≤ {GOAL}×")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
