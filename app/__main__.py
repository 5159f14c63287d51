"""`python -m app`: the same entry point as the `toolscope` command (kept import-light for --version)."""

import sys

from app.cli import main

if __name__ == "__main__":
    sys.exit(main())
