"""Only imports procs: they are checked in the module that builds them (cli tests)."""

from copy_variants import copy256  # noqa: F401
