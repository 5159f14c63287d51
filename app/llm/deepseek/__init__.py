"""The `deepseek-chat` wire dialect: chat completions, as DeepSeek and OpenAI-compatible servers speak it."""
