"""The catalogs are complete and current, and the language is chosen and applied as documented."""

from __future__ import annotations

import importlib.util
import os
import shutil
import string
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.pofile import read_po

from app import i18n

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "translations" / "toolscope.pot"
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")


def _load_update_script() -> ModuleType:
    """`translations/update.py`, whose extraction is the one the docs tell translators to run."""
    spec = importlib.util.spec_from_file_location("translations_update", ROOT / "translations" / "update.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as handle:
        return read_po(handle, locale=locale)


def _messages(catalog: Catalog) -> list[Message]:
    return [message for message in catalog if message.id]


def _ids(catalog: Catalog) -> set[object]:
    return {message.id for message in _messages(catalog)}


def _forms(value: str | tuple[str, ...]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _fields(text: str) -> set[str]:
    return {field for _literal, field, _spec, _conv in string.Formatter().parse(text) if field is not None}


@pytest.fixture
def english() -> Iterator[None]:
    """Leave the process in English whatever a test switched to."""
    yield
    i18n.set_language("en")


@pytest.fixture
def clean_locale(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for variable in LOCALE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


# --- the catalogs ----------------------------------------------------------------------------


def test_template_matches_the_code(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.pot"
    _load_update_script().extract(fresh)
    extracted, committed = _ids(_read(fresh)), _ids(_read(TEMPLATE))
    assert extracted == committed, (
        f"translations/toolscope.pot is out of date; run `.venv/bin/python translations/update.py`. "
        f"New: {sorted(map(str, extracted - committed))}; gone: {sorted(map(str, committed - extracted))}"
    )


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_catalog_has_every_template_message(language: str) -> None:
    catalog = _read(ROOT / "translations" / language / "LC_MESSAGES" / "toolscope.po", language)
    assert _ids(catalog) == _ids(_read(TEMPLATE))


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_catalog_is_fully_translated(language: str) -> None:
    catalog = _read(ROOT / "translations" / language / "LC_MESSAGES" / "toolscope.po", language)
    problems = []
    for message in _messages(catalog):
        forms = _forms(message.string)
        if message.fuzzy:
            problems.append(f"fuzzy: {message.id!r}")
        if not all(forms):
            problems.append(f"untranslated: {message.id!r}")
        if message.pluralizable and len(forms) != catalog.num_plurals:
            problems.append(f"{len(forms)} plural forms instead of {catalog.num_plurals}: {message.id!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_translations_keep_placeholders(language: str) -> None:
    catalog = _read(ROOT / "translations" / language / "LC_MESSAGES" / "toolscope.po", language)
    problems = [f"{message.id!r}: {error}" for message, errors in catalog.check() for error in errors]
    for message in _messages(catalog):
        source = _fields(" ".join(_forms(message.id)))
        for form in _forms(message.string):
            if "python-brace-format" in message.flags and _fields(form) != source:
                problems.append(f"{message.id!r}: fields {sorted(_fields(form))} != {sorted(source)}")
    assert not problems, "\n".join(problems)


def test_english_catalog_repeats_the_source() -> None:
    catalog = _read(ROOT / "translations" / "en" / "LC_MESSAGES" / "toolscope.po", "en")
    assert all(_forms(message.string) == _forms(message.id) for message in _messages(catalog))


# --- choosing the language ---------------------------------------------------------------------


def test_command_line_beats_config_and_environment(clean_locale: pytest.MonkeyPatch) -> None:
    clean_locale.setenv("LANG", "zh_CN.UTF-8")
    assert i18n.detect_language(cli="en", config="zh_CN") == "en"
    assert i18n.detect_language(cli="zh-cn", config="en") == "zh_CN"


def test_config_beats_environment(clean_locale: pytest.MonkeyPatch) -> None:
    clean_locale.setenv("LANG", "en_US.UTF-8")
    assert i18n.detect_language(config="zh_CN") == "zh_CN"


def test_environment_order_is_lc_all_then_lc_messages_then_lang(clean_locale: pytest.MonkeyPatch) -> None:
    clean_locale.setenv("LANG", "en_GB.UTF-8")
    assert i18n.detect_language() == "en"
    clean_locale.setenv("LC_MESSAGES", "zh_CN.UTF-8")
    assert i18n.detect_language() == "zh_CN"
    clean_locale.setenv("LC_ALL", "C")
    assert i18n.detect_language() == "en"


def test_unsupported_or_missing_locale_falls_back_to_english(clean_locale: pytest.MonkeyPatch) -> None:
    assert i18n.detect_language() == "en"
    clean_locale.setenv("LANG", "fr_FR.UTF-8")
    assert i18n.detect_language(cli="de", config="xx") == "en"


# --- translating -----------------------------------------------------------------------------


def test_zh_cn_translates_at_runtime(english: None) -> None:
    i18n.set_language("zh_CN")
    assert i18n.current_language() == "zh_CN"
    assert i18n._("No sessions yet.") == "还没有会话。"
    i18n.set_language("en")
    assert i18n._("No sessions yet.") == "No sessions yet."


def test_ngettext_picks_the_form_for_the_count(english: None) -> None:
    singular, plural = "{count} session", "{count} sessions"
    assert i18n.ngettext(singular, plural, 1).format(count=1) == "1 session"
    assert i18n.ngettext(singular, plural, 0).format(count=0) == "0 sessions"
    assert i18n.ngettext(singular, plural, 2).format(count=2) == "2 sessions"
    i18n.set_language("zh_CN")
    assert i18n.ngettext(singular, plural, 1).format(count=1) == "共 1 个会话"
    assert i18n.ngettext(singular, plural, 5).format(count=5) == "共 5 个会话"


def test_stale_compiled_catalog_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, english: None) -> None:
    shutil.copytree(ROOT / "translations", tmp_path / "translations", ignore=shutil.ignore_patterns("*.mo"))
    monkeypatch.setattr(i18n, "TRANSLATIONS_DIR", tmp_path / "translations")
    po = tmp_path / "translations" / "zh_CN" / "LC_MESSAGES" / "toolscope.po"
    mo = po.with_suffix(".mo")

    i18n.set_language("zh_CN")
    assert mo.exists()
    assert i18n._("No sessions yet.") == "还没有会话。"

    po.write_text(po.read_text(encoding="utf-8").replace("还没有会话。", "暂无会话。"), encoding="utf-8")
    stale = mo.stat().st_mtime - 10
    os.utime(mo, (stale, stale))
    i18n.set_language("zh_CN")
    assert i18n._("No sessions yet.") == "暂无会话。"
    assert not list(mo.parent.glob("*.tmp"))
