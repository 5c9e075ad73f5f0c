"""What a buffer name denotes in a procedure: its shape and scalar type, for tensors
(parameters), allocations and window statements (resolved to the tensor they view)."""

from __future__ import annotations

from ..ir import nodes as N
from .errors import SchedulingError
from .irtools import walk


def tensor_shape(proc, name):
    prm = proc.param(name)
    if prm is not None and prm.is_data:
        return prm.type.shape
    for s in walk(proc.body):
        if isinstance(s, N.Alloc) and s.name == name:
            return s.type.shape
    raise SchedulingError(f"'{name}' is not a tensor, a window of one, or an allocation of "
                          f"{proc.name}", proc)


def tensor_scalar(proc, name):
    """The scalar type of a tensor, allocation or window statement (resolved to its base)."""
    prm = proc.param(name)
    if prm is not None and prm.is_data:
        return prm.type.scalar
    for s in walk(proc.body):
        if isinstance(s, N.Alloc) and s.name == name:
            return s.type.scalar
        if isinstance(s, N.WindowStmt) and s.name == name:
            return tensor_scalar(proc, s.rhs.name)
    raise SchedulingError(f"'{name}' is not a tensor, a window of one, or an allocation of "
                          f"{proc.name}", proc)
