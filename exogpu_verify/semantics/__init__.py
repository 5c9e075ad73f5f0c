"""The sequential reference interpreter: the meaning of a program, executed on numpy arrays.

``interpret(p, **args)`` runs ``p`` sequentially, mutating its data arguments in place (like
Exo); ``interpret_with(p, args, vectorize=False)`` is the same without vectorization.

Meaning
    Every loop (``seq``, ``cuda_tasks``, ``cuda_threads``) runs as ``range(lo, hi)``; ``with``
    blocks run their body; synchronization (``Fence``, ``Arrive``, ``Await``, barrier
    allocations, trailing ``>> z[...]`` of calls) does nothing. Windows are numpy views
    (a point coordinate drops the dimension). A call checks the callee's size arguments,
    window shapes and ``assert`` preconditions at the call site, then runs its body.
    Allocations are fresh arrays, floats filled with NaN (so reading uninitialized data
    shows) and integers with 0. Out-of-bounds indices are errors, never numpy wrap-around.

Control arithmetic
    Python integers: ``/`` is floor division, ``%`` Python's (floor) modulo.

Precision rule (data)
    A statement ``x[i] = e`` (or ``x[i] += e``, which means ``x[i] = x[i] + e``) computes in
    one precision: ``promote`` (``ir/types.py``) folded over the destination's scalar type
    and the type of every array element read in ``e``. Float literals (type ``R``) take that
    precision; a control value (a loop variable, ``i * 2 + 1``) is its integer value
    converted to it. Every operation rounds to that precision (IEEE, per operation; numpy
    and ml_dtypes), and the store rounds to the destination type. So ``bf16 * bf16``
    accumulated into ``f32`` computes exactly in f32, as tensor cores do, while
    ``f16 + f16`` into ``f16`` rounds to f16 after the addition. Integer precisions use C
    semantics: ``/`` truncates toward zero, ``%`` takes the dividend's sign, results wrap
    around. Builtins: ``relu(x) = x if x > 0 else 0`` (NaN gives 0), ``sqrt``, ``exp``,
    ``abs``, ``fmax``/``fmin`` (C's: a NaN operand is ignored),
    ``select(a, b, c, d) = c if a < b else d``.

Execution
    Procedures compile to Python source once (cached per procedure object). A loop whose
    iterations provably write disjoint elements (``vectorize.py``) runs as one numpy vector
    operation per statement; per element that is the same operations in the same order,
    so results are bitwise identical to one-at-a-time execution. No reduction is reordered.
"""

from .interpreter import generated_source, interpret, interpret_with

__all__ = ["interpret", "interpret_with", "generated_source"]
