"""``python -m glmbandits``: the same command line as the ``glmbandits`` script."""

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
