"""Refresh the catalogs after user-facing strings change in `app/` (docs/i18n.md).

Extracts `translations/toolscope.pot` from the code, updates the en and zh_CN catalogs from it,
copies every English msgid into its msgstr (English is the source language, so its catalog is
complete by construction), and lists the zh_CN messages that still need a translator. Run from
anywhere: `.venv/bin/python translations/update.py`. Exits 1 while zh_CN is incomplete.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from babel.messages.frontend import CommandLineInterface
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
TRANSLATIONS = ROOT / "translations"
TEMPLATE = TRANSLATIONS / "toolscope.pot"
DOMAIN = "toolscope"
LANGUAGES = ("en", "zh_CN")


def extract(output: Path) -> None:
    """Write the template of every string `app/` marks with `_`, `ngettext` or `N_` to `output`."""
    from app import __version__

    _pybabel(
        "extract",
        *("--mapping-file", "translations/babel.cfg", "--no-default-keywords"),
        *("--keyword", "_", "--keyword", "ngettext:1,2", "--keyword", "N_"),
        *("--add-comments", "TRANSLATORS:", "--project", "toolscope", "--version", __version__),
        *("--copyright-holder", "toolscope contributors", "--output-file", str(output)),
        "app",
    )


def catalog_path(language: str) -> Path:
    return TRANSLATIONS / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def main() -> int:
    extract(TEMPLATE)
    for language in LANGUAGES:
        po = catalog_path(language)
        arguments = ["-i", str(TEMPLATE), "-d", str(TRANSLATIONS), "-D", DOMAIN, "-l", language]
        if po.exists():
            _pybabel("update", *arguments, "--ignore-obsolete")
        else:
            _pybabel("init", *arguments)
    _fill_source_language(catalog_path("en"))
    missing = _needing_translation(catalog_path("zh_CN"))
    for message in missing:
        print(f"zh_CN needs a translation: {message!r}")
    return 1 if missing else 0


def _pybabel(*arguments: str) -> None:
    """Run one pybabel command from the repository root, so catalog locations read `app/…`."""
    previous = os.getcwd()
    os.chdir(ROOT)
    try:
        CommandLineInterface().run(["pybabel", "--quiet", *arguments])
    finally:
        os.chdir(previous)


def _fill_source_language(po: Path) -> None:
    with po.open("rb") as handle:
        catalog = read_po(handle, locale="en")
    for message in catalog:
        if message.id:
            message.string = message.id
            message.flags.discard("fuzzy")
    with po.open("wb") as handle:
        write_po(handle, catalog)


def _needing_translation(po: Path) -> list[str]:
    with po.open("rb") as handle:
        catalog = read_po(handle, locale=po.parent.parent.name)
    return [
        message.id if isinstance(message.id, str) else message.id[0]
        for message in catalog
        if message.id and (message.fuzzy or not all(_forms(message.string)))
    ]


def _forms(string: str | tuple[str, ...]) -> tuple[str, ...]:
    return (string,) if isinstance(string, str) else string


if __name__ == "__main__":
    sys.exit(main())
