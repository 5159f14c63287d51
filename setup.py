"""Build hook: the translation catalogs ship compiled, as package data (`app/locale/…/toolscope.mo`).

The `.po` files under `translations/` are the source; `.mo` files are build output and never
committed. `build_py` compiles each catalog into the build tree, so every wheel (and so
`pip install .` and pipx) carries them. An editable install reads `translations/` directly.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DOMAIN = "toolscope"


class BuildPyWithCatalogs(build_py):
    def run(self) -> None:
        super().run()
        # An editable install has no build tree to ship: it reads `translations/` in place.
        if not getattr(self, "editable_mode", False):
            self._compile_catalogs()

    def _compile_catalogs(self) -> None:
        # babel is a build requirement (pyproject.toml), as well as a runtime one.
        from babel.messages.mofile import write_mo
        from babel.messages.pofile import read_po

        for po in sorted((ROOT / "translations").glob(f"*/LC_MESSAGES/{DOMAIN}.po")):
            language = po.parent.parent.name
            target = Path(self.build_lib, "app", "locale", language, "LC_MESSAGES", f"{DOMAIN}.mo")
            target.parent.mkdir(parents=True, exist_ok=True)
            with po.open("rb") as source:
                catalog = read_po(source, locale=language)
            with target.open("wb") as compiled:
                write_mo(compiled, catalog)


setup(cmdclass={"build_py": BuildPyWithCatalogs})
