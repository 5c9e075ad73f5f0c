"""``python -m exogpu_verify``: the ``exogpu-verify`` command."""

import sys

from .cli import main

sys.exit(main())
