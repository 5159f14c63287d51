"""The route catalog (DESIGN §5): which dialect, model and endpoint a route uses, and what it can do
with tool changes inside the history."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Dialect = Literal["deepseek-chat", "anthropic-messages", "openai-sdk", "offline"]
ToolUpdateMode = Literal["none", "addition-only", "in-history"]
SystemPromptMode = Literal["top", "in-history"]

DEFAULT_TOOL_UPDATE_BETA = "mid-conversation-tool-changes-2026-07-01"
DEFAULT_BETA_HEADER = "anthropic-beta"


class Route(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(min_length=1)
    dialect: Dialect
    model: str
    base_url: str
    api_key_env: str | None = None
    tool_update: ToolUpdateMode = "none"
    system_prompt: SystemPromptMode = "top"
    tool_update_beta: str = DEFAULT_TOOL_UPDATE_BETA
    beta_header: str = DEFAULT_BETA_HEADER
