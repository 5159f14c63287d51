"""The built wheel, installed into a fresh venv, speaks Chinese: the catalogs ship compiled.

The wheel is built from a copy of the sources by pip, with this environment's build backend
(setuptools, wheel and babel come with the `test` extra) so nothing is downloaded, then installed
with `--no-deps` into a new venv that borrows this environment's site-packages for the
dependencies. The command that runs is the fresh venv's own console script.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("app", "translations", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md")


def _copy_sources(target: Path) -> None:
    ignored = shutil.ignore_patterns("__pycache__", "*.pyc", "*.mo", "*.tmp")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignored)
        else:
            shutil.copy2(source, target / name)


def _pip(*args: str, cwd: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True, text=True, cwd=cwd, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow(seconds=11)
def test_the_installed_wheel_carries_the_chinese_catalog(tmp_path: Path) -> None:
    source = tmp_path / "source"
    _copy_sources(source)
    _pip(
        "wheel", "--no-deps", "--no-index", "--no-build-isolation",
        "--wheel-dir", str(tmp_path / "dist"), str(source), cwd=tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("toolscope-*.whl")
    assert "app/locale/zh_CN/LC_MESSAGES/toolscope.mo" in zipfile.ZipFile(wheel).namelist()

    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    _pip("--python", str(python), "install", "--no-deps", "--no-index", str(wheel), cwd=tmp_path)
    # The dependencies come from this environment, after the fresh venv's own site-packages (so
    # its `app` is the wheel's, not this checkout's).
    fresh_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()
    borrowed = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(fresh_site, "borrowed-dependencies.pth").write_text("\n".join(sorted(borrowed)) + "\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TOOLSCOPE_CONFIG", "LC_ALL")}
    env.update(TOOLSCOPE_HOME=str(tmp_path / "home"), LANG="C.UTF-8")
    where = subprocess.run(
        [str(python), "-c", "import app; print(app.__file__)"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )
    assert where.stdout.strip().startswith(fresh_site), where.stdout + where.stderr
    result = subprocess.run(
        [str(venv / "bin" / "toolscope"), "--lang", "zh_CN", "sessions"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "还没有会话。"
