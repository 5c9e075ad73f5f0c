"""Helpers the generated interpreter code calls: bounds-checked indexing, windows,
allocations, and the C-style integer operations numpy does not spell directly.

Every helper works on numpy scalars and on numpy arrays alike, through the same ufuncs, so
the scalar and the vectorized code paths compute bitwise-identical values.
"""

from __future__ import annotations

import numpy as np


class RunError(Exception):
    """A run-time failure of the user's program (out-of-bounds access, negative extent).

    The interpreter turns it into a ``usage`` error located at the failing statement.
    """


class BadIndex:
    """A hoisted vector index that was found out of bounds when it was precomputed.

    The check is hoisted out of inner loops, which may run zero times, so the failure must
    only surface when the index is used: numpy rejects this object with an ``IndexError``,
    and the interpreter then reports ``message`` for the statement that used it.
    """

    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message


def nonneg(i: int) -> int:
    """A scalar index that static bounds could not prove non-negative (numpy would wrap)."""
    if i < 0:
        raise RunError(f"index {i} is negative")
    return i


def vec_slice(start: int, step: int, n: int, size: int):
    """``slice`` for the ``n`` indices ``start, start + step, ...`` (``step > 0``) in a
    dimension of ``size``, or a ``BadIndex`` (slicing would silently clamp)."""
    stop = start + step * (n - 1) + 1
    if start < 0 or stop > size:
        return BadIndex(f"indices {start}..{stop - 1} are out of bounds for a dimension of "
                        f"size {size}")
    return slice(start, stop, step)


def vec_index(v: np.ndarray, size: int):
    """A fancy index vector checked against ``0 <= v < size``, or a ``BadIndex``."""
    lo, hi = int(v.min()), int(v.max())
    if lo < 0 or hi >= size:
        return BadIndex(f"indices {lo}..{hi} are out of bounds for a dimension of size {size}")
    return v


def checked(ix):
    """Raise at once for an index computed in place (not hoisted)."""
    if isinstance(ix, BadIndex):
        raise RunError(ix.message)
    return ix


def window(arr: np.ndarray, spec: tuple) -> np.ndarray:
    """The numpy view for a window: ``spec`` holds an int per point coordinate (dimension
    dropped) and a ``(lo, hi)`` pair per interval; always a view, also at rank 0."""
    if len(spec) != arr.ndim:
        raise RunError(f"window has {len(spec)} coordinates for an array of rank {arr.ndim}")
    key = []
    for d, s in enumerate(spec):
        n = arr.shape[d]
        if isinstance(s, tuple):
            lo, hi = s
            if not 0 <= lo <= hi <= n:
                raise RunError(f"window interval {lo}:{hi} is out of bounds for dimension {d} "
                               f"of size {n}")
            key.append(slice(lo, hi))
        else:
            if not 0 <= s < n:
                raise RunError(f"window point {s} is out of bounds for dimension {d} of "
                               f"size {n}")
            key.append(s)
    # the trailing Ellipsis makes numpy return a 0-d view rather than a scalar copy
    return arr[tuple(key) + (Ellipsis,)]


def alloc(name: str, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A fresh allocation: floats hold NaN so that reading uninitialized data shows."""
    if any(n < 0 for n in shape):
        raise RunError(f"allocation {name} has a negative extent {shape}")
    fill = np.nan if dtype.kind == "f" or dtype.name == "bfloat16" else 0
    return np.full(shape, fill, dtype=dtype)


def c_div(a, b):
    """C integer division (truncation toward zero); numpy's ``//`` floors."""
    q = a // b
    # floor and truncation differ exactly when the quotient is negative and inexact
    return q + ((q < 0) & (q * b != a))


def c_mod(a, b):
    """C ``%``/``fmod``: the remainder takes the sign of the dividend."""
    return np.fmod(a, b)


def relu_scalar(x, zero):
    return x if x > zero else zero


def relu_vec(x, zero):
    return np.where(x > zero, x, zero)


def select_scalar(a, b, c, d):
    return c if a < b else d


def select_vec(a, b, c, d):
    return np.where(a < b, c, d)


def arange(lo: int, hi: int) -> np.ndarray:
    return np.arange(lo, hi, dtype=np.intp)


def ctl_to_data(x, dtype):
    """A control value (Python int or int vector) converted to a data precision.

    Both paths go through numpy's int64 cast so that scalar and vector agree bitwise (and
    integers wrap like a C conversion)."""
    if isinstance(x, np.ndarray):
        return x.astype(dtype)
    return np.int64(x).astype(dtype)


#: names the generated code sees
NAMESPACE = {
    "np": np,
    "_nonneg": nonneg,
    "_vslice": vec_slice,
    "_vindex": vec_index,
    "_checked": checked,
    "_window": window,
    "_alloc": alloc,
    "_cdiv": c_div,
    "_cmod": c_mod,
    "_relu_s": relu_scalar,
    "_relu_v": relu_vec,
    "_select_s": select_scalar,
    "_select_v": select_vec,
    "_arange": arange,
    "_ctl": ctl_to_data,
}
