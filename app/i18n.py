"""The one place user-facing strings are translated (gettext catalogs under `translations/`).

Call `_("…")` and `ngettext("…", "…", n)` at the point a string is shown, never at import time, so a
language chosen later (`--lang`, config) applies. `N_` marks a string for extraction only.
An installed package reads the compiled catalogs it ships (`app/locale/`, built by `setup.py`); a
source checkout reads `translations/`, compiling a `.po` whose `.mo` is missing or stale.
The language is chosen by `setup_language()`: `--lang`, then config, then `LC_ALL`/`LC_MESSAGES`/
`LANG`, falling back to English.
"""

from __future__ import annotations

import gettext as _gettext
import os
from pathlib import Path
from typing import BinaryIO

DOMAIN = "toolscope"
TRANSLATIONS_DIR = Path(__file__).resolve().parent.parent / "translations"
PACKAGED_DIR = Path(__file__).resolve().parent / "locale"
SUPPORTED = ("en", "zh_CN")

_translations: _gettext.NullTranslations = _gettext.NullTranslations()
_language = "en"


def _(message: str) -> str:
    """Translate `message` into the current language."""
    return _translations.gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of a counted message that suits `n` in the current language."""
    return _translations.ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Mark for extraction; translate later with `_()`."""
    return message


def current_language() -> str:
    return _language


def normalize_language(value: str | None) -> str | None:
    """Map a locale name (`zh_CN.UTF-8`, `zh-cn`, `en_US`, `C`) onto a supported catalog, or None."""
    if not value:
        return None
    base = value.split(".", 1)[0].split("@", 1)[0].replace("-", "_")
    if not base or base in ("C", "POSIX"):
        return None
    lang, _sep, region = base.partition("_")
    lang = lang.lower()
    if lang == "zh":
        return "zh_CN"
    if lang == "en":
        return "en"
    candidate = f"{lang}_{region.upper()}" if region else lang
    return candidate if candidate in SUPPORTED else None


def detect_language(cli: str | None = None, config: str | None = None) -> str:
    """`--lang`, then config, then the environment, then English."""
    for value in (cli, config):
        lang = normalize_language(value)
        if lang:
            return lang
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var)
        if value:
            # The first variable that is set decides, as in POSIX.
            return normalize_language(value) or "en"
    return "en"


def set_language(language: str) -> None:
    """Load the catalog for `language` (compiling the .po when its .mo is missing or stale)."""
    global _translations, _language
    _language = language
    if language == "en":
        _translations = _gettext.NullTranslations()
        return
    _translations = _load_catalog(language)


def setup_language(cli: str | None = None, config: str | None = None) -> str:
    language = detect_language(cli, config)
    set_language(language)
    return language


def _load_catalog(language: str) -> _gettext.NullTranslations:
    """The source checkout's catalog when there is one (it is the truth while developing), else
    the one the installed package ships, else English."""
    po = TRANSLATIONS_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    mo = po.with_suffix(".mo")
    if not po.exists() and not mo.exists():
        mo = PACKAGED_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.mo"
        if not mo.exists():
            return _gettext.NullTranslations()
    if po.exists() and (not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime):
        try:
            compile_catalog(po, mo)
        except OSError:
            # A read-only install: translate straight from the .po, in memory.
            return _catalog_from_po(po)
    with mo.open("rb") as handle:
        return _gettext.GNUTranslations(handle)


def _catalog_from_po(po: Path) -> _gettext.NullTranslations:
    import io

    buffer = io.BytesIO()
    _write_mo(po, buffer)
    buffer.seek(0)
    return _gettext.GNUTranslations(buffer)


def _write_mo(po: Path, out: BinaryIO) -> None:
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po.open("rb") as handle:
        catalog = read_po(handle, locale=po.parent.parent.name)
    write_mo(out, catalog)


def compile_catalog(po: Path, mo: Path) -> None:
    """Write `mo` atomically; a per-process temporary name lets concurrent first runs race safely."""
    tmp = mo.with_name(f"{mo.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as handle:
            _write_mo(po, handle)
        os.replace(tmp, mo)
    finally:
        tmp.unlink(missing_ok=True)
