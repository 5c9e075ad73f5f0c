"""The symbolic checker: all-size proofs with islpy + Z3, witnesses by concrete replay."""

from .check import SymbolicResult, check_sync_symbolic  # noqa: F401
