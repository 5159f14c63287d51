"""The tool tests run on asyncio, the loop toolscope runs on (MCP supervisors are asyncio tasks)."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
