"""The shape of a DeepSeek (OpenAI-compatible) chat-completions stream chunk, as observed.

These models document what `DeepSeekTranslator` reads. They are lax about types and keep unknown
keys, like the providers and gateways that send them. `null` is admitted where gateways send it —
`id`, `function.name`, `function.arguments`, `content`, `reasoning_content` — so the translator's
runtime identity guard is load-bearing, not speculative (seed 004). Indexes are strict integers; a
tool-call fragment may lack one (Mistral), and then its position in `tool_calls` stands in.

The translator does not validate chunks with these models on its hot path (plain `json.loads` and
careful dict access are much faster); the tests prove the two agree: the translator never
rejects a chunk these models accept, and reads such a chunk the way these models do.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

StrictIndex = Annotated[int, Field(strict=True)]


class WireModel(BaseModel):
    model_config = ConfigDict(extra="allow")


class WireFunctionDelta(WireModel):
    name: str | None = None
    arguments: str | None = None


class WireToolCallDelta(WireModel):
    """One fragment of a tool call. Calls are keyed by `index` (absent: the fragment's position in
    the array); `id` and `function.name` are identity (taken when a non-empty string, never
    concatenated), `arguments` concatenate."""

    index: StrictIndex | None = None
    id: str | None = None
    type: str | None = None
    function: WireFunctionDelta | None = None


class WireDelta(WireModel):
    role: str | None = None
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    """Groq, OpenRouter and recent vLLM name the reasoning text so."""
    reasoning_details: list[Any] | None = None
    """OpenRouter's structured reasoning: `reasoning.text` entries carry `text`,
    `reasoning.summary` ones `summary`."""
    tool_calls: list[WireToolCallDelta] | None = None


class WireChoice(WireModel):
    index: StrictIndex = 0
    delta: WireDelta | None = None
    finish_reason: str | None = None


class WirePromptTokensDetails(WireModel):
    cached_tokens: int | None = None


class WireCompletionTokensDetails(WireModel):
    reasoning_tokens: int | None = None


class WireUsage(WireModel):
    """Sent once, in a chunk of its own with empty `choices`, after the finish reason
    (`stream_options.include_usage`). DeepSeek reports cache hits as `prompt_cache_hit_tokens`,
    OpenAI-compatible servers as `prompt_tokens_details.cached_tokens`."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    prompt_cache_hit_tokens: int | None = None
    prompt_cache_miss_tokens: int | None = None
    prompt_tokens_details: WirePromptTokensDetails | None = None
    completion_tokens_details: WireCompletionTokensDetails | None = None


class WireChunk(WireModel):
    """One `data:` payload. An `error` member (any shape) ends the stream with a mapped failure."""

    id: str | None = None
    model: str | None = None
    choices: list[WireChoice] | None = None
    usage: WireUsage | None = None
    error: Any = None
