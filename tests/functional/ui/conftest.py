"""The UI tests run on asyncio, the loop Textual and the MCP supervisors run on."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
