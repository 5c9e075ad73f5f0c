"""Procs built by a factory imported from another module (cli tests)."""

from __future__ import annotations

from copy_factory import make_copy

copy256 = make_copy(256)
copy128 = make_copy(128)
