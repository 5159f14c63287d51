"""The UI tests run on asyncio, the loop Textual and the MCP supervisors run on; `chinese` switches the
interface to zh_CN for one test."""

from collections.abc import Iterator

import pytest

from app import i18n


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def chinese() -> Iterator[None]:
    before = i18n.current_language()
    i18n.set_language("zh_CN")
    try:
        yield
    finally:
        i18n.set_language(before)
