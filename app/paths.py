"""Where toolscope keeps its files: `TOOLSCOPE_HOME`, else the platform's per-user data dir."""

from __future__ import annotations

import os
from pathlib import Path


def data_home() -> Path:
    override = os.environ.get("TOOLSCOPE_HOME")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_path

    return user_data_path("toolscope", appauthor=False)


def sessions_dir() -> Path:
    return data_home() / "sessions"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700; tighten it if it already exists."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path


def config_file(cli_value: str | None = None) -> Path | None:
    """`--config FILE`, else `TOOLSCOPE_CONFIG`, else `<data home>/config.toml` when it exists."""
    if cli_value:
        return Path(cli_value).expanduser()
    env = os.environ.get("TOOLSCOPE_CONFIG")
    if env:
        return Path(env).expanduser()
    default = data_home() / "config.toml"
    return default if default.exists() else None
