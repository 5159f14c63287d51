"""An MCP server command that fails before the handshake: it complains on stderr and exits 2."""

import sys

sys.stderr.write("fatal: cannot open the configuration file\n")
sys.exit(2)
