"""``exogpu-verify`` whose every check sleeps (for the Ctrl-C test in test_cli_jobs.py):
``verify`` is replaced before ``main`` runs, and forked workers inherit the replacement."""

import sys
import time

import exogpu_verify.cli as cli


def _sleep(p, **kw):
    time.sleep(600)


if __name__ == "__main__":
    cli.verify = _sleep
    sys.exit(cli.main(sys.argv[1:]))
