"""``python -m biastest``: the command line (see :mod:`biastest.cli`)."""

import sys

from biastest.cli import main

if __name__ == "__main__":
    sys.exit(main())
