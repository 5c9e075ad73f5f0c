"""``python -m exogpu_verify``: the ``exogpu-verify`` command."""

import sys

from .cli import main

if __name__ == "__main__":  # not when a spawned worker process re-imports the main module
    sys.exit(main())
