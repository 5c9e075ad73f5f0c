"""The raw launch path of a built kernel library: ``k.launch(stream=s, M=..., A=a, ...)``.

No argument checks, no staging, no synchronization: the arguments go straight into the
``extern "C"`` entry (``int exo_<proc>(void* stream, <params>)``, ``host.py``), which queues
the kernels on ``stream`` and returns. Sizes are passed as given (nothing is inferred from
shapes); tensors as any object with a device pointer (a PyTorch tensor, a CuPy array,
anything with ``__cuda_array_interface__``, or a plain ``int``). ``bind(**args)`` converts
the arguments once and returns a callable ``bound(stream)`` for timing loops.

This module imports the standard library only (no ``exogpu_verify``, numpy, CuPy or
PyTorch), so a machine without the checker can load it by file path next to the built
libraries and a manifest (``bench/gpu_run.py``); ``runtime.Kernel`` uses it for its raw path.
"""

from __future__ import annotations

import ctypes

#: ctypes type of each entry-parameter kind (``generate.Generated.params``)
KINDS = {"int64": ctypes.c_int64, "ptr": ctypes.c_void_p, "double": ctypes.c_double,
         "stride": ctypes.c_int64}


class LaunchError(RuntimeError):
    """The entry returned a CUDA (or tensor-map encoding) error code."""

    def __init__(self, proc: str, code: int, message: str):
        super().__init__(f"{proc}: the launch failed: {message} (error {code})")
        self.code = code


def load_library(path) -> ctypes.CDLL:
    """``ctypes.CDLL`` of a built library with the ``exo_rt_*`` helpers' signatures set."""
    lib = ctypes.CDLL(str(path))
    lib.exo_rt_error_string.restype = ctypes.c_char_p
    lib.exo_rt_error_string.argtypes = [ctypes.c_int]
    lib.exo_rt_malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    lib.exo_rt_free.argtypes = [ctypes.c_void_p]
    lib.exo_rt_memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                  ctypes.c_int]
    lib.exo_rt_sync.argtypes = [ctypes.c_void_p]
    if hasattr(lib, "exo_rt_set_grid_limit"):
        lib.exo_rt_set_grid_limit.argtypes = [ctypes.c_int64]
    return lib


#: an entry returns ``ALIGN_BASE + i`` when parameter ``i``'s pointer is misaligned for the
#: vector or asynchronous accesses its proof assumed aligned (``host.py``)
ALIGN_BASE = 300000
_ALIGN_MAX = 100000


def error_string(lib, code: int, names=()) -> str:
    """The message of an entry's or the CUDA runtime's error code; ``names``: the proc's
    parameters in order, to name the argument of an alignment error."""
    i = int(code) - ALIGN_BASE
    if 0 <= i < _ALIGN_MAX:
        who = f"argument '{names[i]}'" if i < len(names) else f"parameter {i}"
        return (f"{who}: its device pointer is not aligned as the kernel's vector or "
                "asynchronous accesses need (the generated entry's check; the proofs assume "
                "it: cudaMalloc returns 256-byte aligned memory, an offset slice may not be)")
    return lib.exo_rt_error_string(int(code)).decode(errors="replace")


def stream_ptr(stream) -> int:
    """The ``cudaStream_t`` of ``stream``: ``None``/0 (the default stream), an ``int``, a
    CuPy stream (``.ptr``) or a PyTorch stream (``.cuda_stream``)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v
    raise TypeError(f"cannot take a CUDA stream from a {type(stream).__name__}")


def device_ptr(x) -> int:
    """The device address of a tensor argument (no check of shape, dtype or device)."""
    if isinstance(x, int):
        return x
    dp = getattr(x, "data_ptr", None)            # PyTorch
    if callable(dp):
        return int(dp())
    data = getattr(x, "data", None)              # CuPy: x.data.ptr
    p = getattr(data, "ptr", None)
    if isinstance(p, int):
        return p
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    raise TypeError(f"cannot take a device pointer from a {type(x).__name__}")


def element_strides(x) -> tuple[int, ...]:
    """Element strides of a tensor argument (window parameters pass them)."""
    st = getattr(x, "stride", None)              # PyTorch: x.stride()
    if callable(st):
        return tuple(int(s) for s in st())
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(int(e) for e in cai["shape"])
        itemsize = int(cai["typestr"][2:])
        if cai.get("strides") is None:
            out, acc = [], 1
            for e in reversed(shape):
                out.append(acc)
                acc *= e
            return tuple(reversed(out))
        return tuple(int(s) // itemsize for s in cai["strides"])
    raise TypeError(f"cannot take strides from a {type(x).__name__}")


class RawLaunch:
    """The entry of one proc, called with arguments by name and nothing checked.

    ``params`` lists the entry's parameters after the stream as ``(C++ declaration, kind,
    name)`` (``Generated.params``; the manifest of ``bench/gpu_run.py`` stores them); a
    ``stride`` parameter's declaration ends in ``_s<d>`` (the element stride of dimension
    ``d`` of tensor ``name``)."""

    def __init__(self, lib, entry: str, params, proc: str | None = None):
        self.lib = lib
        self.proc = proc or entry
        self.fn = getattr(lib, entry)
        plan = []
        for decl, kind, name in params:
            dim = int(decl.rsplit("_s", 1)[1]) if kind == "stride" else -1
            plan.append((kind, name, dim))
        self.plan = tuple(plan)
        self.names = tuple(dict.fromkeys(n for _, n, _ in plan))
        self.fn.argtypes = [ctypes.c_void_p] + [KINDS[k] for k, _, _ in plan]
        self.fn.restype = ctypes.c_int

    def args(self, kwargs) -> list:
        """The entry's arguments after the stream, converted for ctypes."""
        out = []
        try:
            for kind, name, dim in self.plan:
                v = kwargs[name]
                if kind == "ptr":
                    out.append(device_ptr(v))
                elif kind == "int64":
                    out.append(int(v))
                elif kind == "double":
                    out.append(float(v))
                else:
                    out.append(element_strides(v)[dim])
        except KeyError as e:
            raise TypeError(f"{self.proc}.launch() is missing the argument {e.args[0]!r} "
                            f"(the raw path infers nothing: pass {', '.join(self.names)})"
                            ) from None
        return out

    def __call__(self, stream=None, **kwargs) -> None:
        rc = self.fn(stream_ptr(stream), *self.args(kwargs))
        if rc:
            raise LaunchError(self.proc, rc, error_string(self.lib, rc, self.names))

    def bind(self, **kwargs):
        """``bound(stream=None)``: this launch with its arguments converted once."""
        args = tuple(self.args(kwargs))
        fn, lib, proc, names = self.fn, self.lib, self.proc, self.names

        def bound(stream=None) -> None:
            rc = fn(stream_ptr(stream), *args)
            if rc:
                raise LaunchError(proc, rc, error_string(lib, rc, names))
        return bound


def set_grid_limit(lib, ctas: int) -> None:
    """At most ``ctas`` CTAs per launch of every kernel of ``lib`` (0: one per SM times
    ``blocks_per_sm``, the default). Fewer CTAs make each run more tasks (persistent reuse of
    barriers and ring phases at small sizes, e.g. under compute-sanitizer)."""
    lib.exo_rt_set_grid_limit(int(ctas))
