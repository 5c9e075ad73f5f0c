"""Calling a built kernel library from Python: ``Kernel(**args)``.

Arguments are passed by name (``stream=`` is the CUDA stream, see ``Kernel``): sizes as Python ints (a size missing from the call is read
from the shape of an array argument whose declared extent is exactly that size), tensors as
device arrays (anything with ``__cuda_array_interface__`` such as CuPy, Numba or PyTorch
CUDA tensors, or any DLPack producer on a CUDA device) or as numpy arrays (copied to the
device and back). Shapes, dtypes and strides are checked against the declaration, and the
proc's ``assert``s against the actual sizes and strides, before anything runs; every problem
is an ``ExoGpuError`` of kind ``usage``. Nothing here imports CuPy or touches a GPU until a
kernel is called.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass

import numpy as np

from exogpu_verify.ir.printer import expr_str
from exogpu_verify.ir import nodes as N

from .cexpr import eval_ctl
from .errors import usage
from .launch import (LaunchError, RawLaunch, error_string, load_library, set_grid_limit,
                     stream_ptr)

_INT32_MAX = 2**31 - 1


# ---------------------------------------------------------------- array views

@dataclass
class _Array:
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]   # in elements
    dtype: np.dtype | None     # None: could not tell (compared by itemsize and kind)
    itemsize: int
    kind: str                  # numpy kind letter, "V" for bfloat16-like
    device: bool
    keep: object = None        # objects that must stay alive during the call
    host: np.ndarray | None = None


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_DL_KIND = {0: "i", 1: "u", 2: "f", 4: "V"}
_DL_CUDA = (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def _injective(shape, strides) -> bool:
    """No two indices of the view share an element (a sufficient test: every stride, by size,
    exceeds the span of the dimensions with smaller strides)."""
    dims = sorted((abs(s), e) for s, e in zip(strides, shape) if e > 1)
    span = 0
    for s, e in dims:
        if s <= span:
            return False
        span += s * (e - 1)
    return True


def _byte_span(a) -> tuple[int, int]:
    """[first, last + 1) bytes the view can touch."""
    lo = hi = 0
    for s, e in zip(a.strides, a.shape):
        if e <= 0:
            return a.ptr, a.ptr
        ext = s * (e - 1)
        lo, hi = lo + min(0, ext), hi + max(0, ext)
    return a.ptr + lo * a.itemsize, a.ptr + (hi + 1) * a.itemsize


def _c_strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for e in reversed(shape):
        out.append(acc)
        acc *= int(e)
    return tuple(reversed(out))


def as_array(name: str, x) -> _Array:
    """Pointer, shape, strides and dtype of a numpy, CUDA-array-interface or DLPack array."""
    if isinstance(x, np.ndarray):
        if any(s % x.itemsize for s in x.strides):
            raise usage(f"argument '{name}': strides not a multiple of the element size")
        kind = "V" if x.dtype.name == "bfloat16" else x.dtype.kind
        return _Array(x.ctypes.data, x.shape, tuple(s // x.itemsize for s in x.strides),
                      x.dtype, x.itemsize, kind, False, x, x)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(int(e) for e in cai["shape"])
        ts = cai["typestr"]
        try:
            dt = np.dtype(ts)
        except TypeError:
            dt = None
        itemsize = int(ts[2:]) if dt is None else dt.itemsize
        kind = "V" if dt is None or dt.kind == "V" else dt.kind
        st = cai.get("strides")
        strides = _c_strides(shape) if st is None else tuple(int(s) // itemsize for s in st)
        return _Array(int(cai["data"][0]), shape, strides, dt, itemsize, kind, True, x)
    if hasattr(x, "__dlpack__"):
        dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (0, 0)
        if int(dev[0]) not in _DL_CUDA:
            raise usage(f"argument '{name}': a DLPack array on device type {dev[0]}, not a "
                        "CUDA device")
        cap = x.__dlpack__()
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        mt = _DLManaged.from_address(get(cap, b"dltensor")).dl_tensor
        shape = tuple(mt.shape[i] for i in range(mt.ndim))
        strides = _c_strides(shape) if not mt.strides else \
            tuple(mt.strides[i] for i in range(mt.ndim))
        itemsize = mt.dtype.bits // 8
        return _Array(mt.data + mt.byte_offset, shape, strides, None, itemsize,
                      _DL_KIND.get(mt.dtype.code, "?"), True, (x, cap))
    raise usage(f"argument '{name}' is a {type(x).__name__}: pass a numpy array, a CuPy array, "
                "or any array with __cuda_array_interface__ or __dlpack__")


def _dtype_ok(a: _Array, want: np.dtype) -> bool:
    if a.dtype is not None and a.dtype.kind != "V":
        return a.dtype == want
    want_kind = "V" if want.name == "bfloat16" else want.kind
    return a.itemsize == want.itemsize and a.kind == want_kind


# ---------------------------------------------------------------- the callable

class Kernel:
    """A compiled proc: ``k(N=4096, A=a, B=b, stream=s)`` (checked) or ``k.launch(...)``
    (raw); ``k.build`` has the library and resources.

    * ``k(**args, stream=None)`` checks names, shapes, dtypes, strides, the proc's asserts and
      the GPU, stages numpy arrays for device memory, and queues the kernels on ``stream``.
      The checks run once per distinct argument signature (pointers, shapes, strides, dtypes,
      sizes and scalars): a call with the same arguments as the previous one goes straight to
      the entry. It synchronizes only when numpy arrays were staged (to copy them back); a
      fault inside a kernel is reported by the next synchronization, as with any CUDA launch
      (``k.synchronize(stream)``).
    * ``k.launch(**args, stream=None)``: no Python checks at all (``launch.RawLaunch``): every
      size passed explicitly, tensors as device arrays or pointers. ``k.bind(**args)`` returns
      ``bound(stream)`` with the arguments converted once.

    The default stream is CuPy's current stream when CuPy arrays are passed, PyTorch's current
    stream for PyTorch tensors, else the legacy default stream. In the generated entry, tensor
    maps are encoded once per distinct (pointer, shape, strides) and cached, and the
    shared-memory attribute and the SM count are set and read once per device
    (``host.py``), so repeated launches with unchanged arguments do no host work beyond the
    launch itself."""

    def __init__(self, proc: N.Procedure, generated, build):
        self.proc = proc
        self.generated = generated
        self.build = build
        self._lib = None
        self._rawl = None
        self._checked = None        # (signature, ctypes args) of the last checked call
        self._device_ok = False
        if any(q.name == "stream" for q in proc.params):
            raise usage(f"{proc.name}: a parameter named 'stream' clashes with the runtime's "
                        "stream= argument; rename it", node=proc.param("stream"))

    @property
    def resources(self):
        return self.build.resources

    @property
    def source(self) -> str:
        return self.generated.source

    def __repr__(self) -> str:
        return f"<exogpu Kernel {self.proc.name} ({self.generated.arch}) at {self.build.library}>"

    def _load(self):
        if self._lib is None:
            try:
                self._lib = load_library(self.build.library)
            except OSError as e:
                raise usage(f"cannot load {self.build.library}: {e}") from None
        return self._lib

    def _raw(self) -> RawLaunch:
        if self._rawl is None:
            self._rawl = RawLaunch(self._load(), self.generated.entry, self.generated.params,
                                   self.proc.name)
        return self._rawl

    def _err(self, what: str, code: int):
        msg = error_string(self._lib, code, [q.name for q in self.proc.params])
        return usage(f"{self.proc.name}: {what} failed: {msg} (error {code})")

    def _needs_gpu(self) -> bool:
        return bool(self.generated.kernels) or any(
            q.is_data and q.mem is not None and q.mem.space == "gmem" for q in self.proc.params)

    def check_device(self) -> None:
        """Raise a clear ``ExoGpuError`` when no suitable GPU is present."""
        lib = self._load()
        n = ctypes.c_int(0)
        rc = lib.exo_rt_device_count(ctypes.byref(n))
        if rc != 0 or n.value == 0:
            why = lib.exo_rt_error_string(rc).decode() if rc else "no device"
            raise usage(f"no CUDA GPU is available to run '{self.proc.name}' ({why})",
                        hint="the code was built; run it on a machine with an NVIDIA GPU "
                             "(sm_90a code needs a Hopper H100/H200)")
        ma, mi = ctypes.c_int(0), ctypes.c_int(0)
        lib.exo_rt_capability(ctypes.byref(ma), ctypes.byref(mi))
        arch = self.generated.arch
        if (arch == "sm_90a" and (ma.value, mi.value) != (9, 0)) or \
                (arch == "sm_80" and ma.value != 8):
            raise usage(f"'{self.proc.name}' was built for {arch}, but the GPU has compute "
                        f"capability {ma.value}.{mi.value}")

    # ------------------------------------------------------------ raw path
    def launch(self, stream=None, **kwargs) -> None:
        """Queue the proc on ``stream`` with no Python checks (see the class docstring)."""
        try:
            self._raw()(stream, **kwargs)
        except LaunchError as e:
            raise self._err("the launch", e.code) from None

    def bind(self, **kwargs):
        """``bound(stream=None)``: the raw launch with its arguments converted once."""
        return self._raw().bind(**kwargs)

    def set_grid_limit(self, ctas: int) -> None:
        """At most ``ctas`` CTAs per launch of this library's kernels (0: the default, one
        per SM times ``blocks_per_sm``); see ``launch.set_grid_limit``."""
        set_grid_limit(self._load(), ctas)

    def synchronize(self, stream=None) -> None:
        """Wait for ``stream``; a fault of a kernel queued on it is raised here."""
        rc = self._load().exo_rt_sync(ctypes.c_void_p(stream_ptr(stream)))
        if rc != 0:
            raise self._err("the kernel", rc)

    # ------------------------------------------------------------ checked path
    def __call__(self, stream=None, **kwargs):
        p = self.proc
        names = [q.name for q in p.params]
        extra = sorted(set(kwargs) - set(names))
        if extra:
            raise usage(f"{p.name}() got unexpected argument(s) {', '.join(extra)}; its "
                        f"parameters are {', '.join(names)}")
        arrays = {q.name: as_array(q.name, kwargs[q.name]) for q in p.params
                  if q.is_data and q.type.shape and q.name in kwargs}
        stream = self._default_stream(stream, arrays)
        staging = any(not a.device and self._in_gmem(n) for n, a in arrays.items())
        sig = None if staging else self._signature(kwargs, arrays)
        if sig is not None and self._checked is not None and self._checked[0] == sig:
            args = self._checked[1]                          # same arguments: checked before
        else:
            args = None
            env = self._sizes(kwargs, arrays)
            self._check_arrays(arrays, env)
            self._check_asserts(env)
            if self._needs_gpu() and not self._device_ok:
                self.check_device()
                self._device_ok = True
        lib = self._load()
        staged = []
        try:
            if args is None:
                args = self._entry_args(kwargs, arrays, env, staged)
                if sig is not None:
                    self._checked = (sig, args)
            rc = getattr(lib, self.generated.entry)(ctypes.c_void_p(stream), *args)
            if rc != 0:
                raise self._err("the launch", rc)
            if staged:
                rc = lib.exo_rt_sync(ctypes.c_void_p(stream))
                if rc != 0:
                    raise self._err("the kernel", rc)
            for host, dev, nbytes in staged:
                rc = lib.exo_rt_memcpy(ctypes.c_void_p(host.ctypes.data), ctypes.c_void_p(dev),
                                       nbytes, 2)
                if rc != 0:
                    raise self._err("copying back to the host", rc)
        finally:
            for _, dev, _ in staged:
                lib.exo_rt_free(ctypes.c_void_p(dev))

    def _in_gmem(self, name: str) -> bool:
        q = self.proc.param(name)
        return q.mem is not None and q.mem.space == "gmem"

    @staticmethod
    def _default_stream(stream, arrays) -> int:
        if stream is not None:
            return stream_ptr(stream)
        mods = {type(a.keep[0] if isinstance(a.keep, tuple) else a.keep).__module__
                .split(".")[0] for a in arrays.values() if a.device}
        if "cupy" in mods and "cupy" in sys.modules:
            return sys.modules["cupy"].cuda.get_current_stream().ptr
        if "torch" in mods and "torch" in sys.modules:
            return sys.modules["torch"].cuda.current_stream().cuda_stream
        return 0

    def _signature(self, kwargs, arrays) -> tuple:
        """What the checks depend on: per array pointer, shape, strides, dtype and host or
        device; every other argument's value."""
        out = []
        for q in self.proc.params:
            if q.name in arrays:
                a = arrays[q.name]
                out.append((q.name, a.ptr, tuple(a.shape), a.strides, str(a.dtype), a.itemsize,
                            a.kind, a.device))
            elif q.name in kwargs:
                v = kwargs[q.name]
                out.append((q.name, type(v).__name__, v if isinstance(v, (int, float)) else
                            id(v)))
        return tuple(out)

    def _entry_args(self, kwargs, arrays, env, staged) -> list:
        p = self.proc
        args = []
        for decl, kind, name in self.generated.params:
            q = p.param(name)
            if kind == "int64":
                args.append(int(env[name]))
            elif kind == "double":
                args.append(float(kwargs[name]))
            elif kind == "stride":
                d = int(decl.rsplit("_s", 1)[1])
                args.append(arrays[name].strides[d])
            else:
                a = arrays[name] if name in arrays else as_array(name, kwargs[name])
                if q.mem is not None and q.mem.space == "gmem" and not a.device:
                    a = self._stage(name, a, staged)
                elif q.mem is not None and q.mem.space == "host" and a.device:
                    raise usage(f"argument '{name}' ({q.mem}) must be a host (numpy) "
                                "array, not a device array")
                args.append(ctypes.c_void_p(a.ptr))
        return args

    def _stage(self, name, a: _Array, staged) -> _Array:
        host = a.host
        if not host.flags.c_contiguous:
            raise usage(f"argument '{name}': a numpy array passed for device memory must be "
                        "C-contiguous (it is copied to the device and back)")
        lib = self._lib
        p = ctypes.c_void_p(0)
        rc = lib.exo_rt_malloc(ctypes.byref(p), host.nbytes)
        if rc != 0:
            raise self._err(f"allocating device memory for '{name}'", rc)
        staged.append((host, p.value, host.nbytes))
        rc = lib.exo_rt_memcpy(p, ctypes.c_void_p(host.ctypes.data), host.nbytes, 1)
        if rc != 0:
            raise self._err(f"copying '{name}' to the device", rc)
        return _Array(p.value, a.shape, a.strides, a.dtype, a.itemsize, a.kind, True)

    # ------------------------------------------------------------ checks
    def _sizes(self, kwargs, arrays) -> dict:
        p = self.proc
        env = {}
        for q in p.params:
            if q.is_data:
                continue
            if q.name in kwargs:
                v = kwargs[q.name]
                if isinstance(v, (bool, np.bool_)) and q.type.name != "bool":
                    raise usage(f"size '{q.name}' must be an int, not a bool")
                try:
                    env[q.name] = int(v)
                except (TypeError, ValueError):
                    raise usage(f"argument '{q.name}' must be an int, not "
                                f"{type(v).__name__}") from None
                continue
            env[q.name] = self._infer(q.name, arrays)
        for q in p.params:
            if q.is_data and q.name not in kwargs:
                raise usage(f"{p.name}() is missing the array argument '{q.name}'")
            if not q.is_data and q.type.name == "size" and env[q.name] <= 0:
                raise usage(f"size '{q.name}' must be positive, not {env[q.name]}")
            if not q.is_data and abs(env[q.name]) > _INT32_MAX:
                raise usage(f"'{q.name}' = {env[q.name]} does not fit the 32-bit index "
                            "arithmetic of the generated code")
        return env

    def _infer(self, size: str, arrays) -> int:
        for q in self.proc.params:
            if q.is_data and q.name in arrays:
                for d, e in enumerate(q.type.shape):
                    if isinstance(e, N.Read) and e.name == size and not e.idx:
                        return int(arrays[q.name].shape[d])
        raise usage(f"{self.proc.name}() is missing the argument '{size}' (and no array "
                    "argument's shape gives it)")

    def _check_arrays(self, arrays, env):
        for q in self.proc.params:
            if not q.is_data:
                continue
            if not q.type.shape:
                continue
            a = arrays[q.name]
            want = tuple(int(eval_ctl(e, env)) for e in q.type.shape)
            if tuple(a.shape) != want:
                raise usage(f"argument '{q.name}' has shape {tuple(a.shape)}, but "
                            f"{q.name}: {q.type.scalar}[{', '.join(expr_str(e) for e in q.type.shape)}]"
                            f" needs {want} for the sizes given")
            if not _dtype_ok(a, q.type.scalar.np_dtype):
                got = a.dtype if a.dtype is not None else f"{a.kind}{a.itemsize * 8}"
                raise usage(f"argument '{q.name}' has dtype {got}, but the parameter is "
                            f"{q.type.scalar} ({q.type.scalar.np_dtype})")
            n = 1
            for e in want:
                n *= e
            if n > _INT32_MAX:
                raise usage(f"argument '{q.name}' has {n} elements; the generated code uses "
                            "32-bit indices")
            if not q.type.is_window and n > 0 and any(
                    s != c for s, c, e in zip(a.strides, _c_strides(want), want) if e > 1):
                raise usage(f"argument '{q.name}' must be C-contiguous (strides "
                            f"{a.strides} elements); declare it as a window "
                            f"`{q.name}: [{q.type.scalar}][...]` to pass strided arrays")
            for d, s in enumerate(a.strides):
                env[("stride", q.name, d)] = s
            if q.type.is_window and not _injective(a.shape, a.strides):
                raise usage(f"argument '{q.name}' has strides {a.strides} under which distinct "
                            "elements share memory; the proof assumes every element of a "
                            "window is its own location (a write to one would race with "
                            "accesses to the other)")
        self._check_aliasing(arrays)

    def _written(self) -> set:
        """Data parameters the procedure mutates anywhere (its AMIR accesses)."""
        w = getattr(self, "_written_names", None)
        if w is None:
            from exogpu_verify.amir import nodes as A
            from exogpu_verify.amir.convert import lower_to_amir

            w = set()
            params = {q.name for q in self.proc.params if q.is_data}

            def walk(stmts):
                for st in stmts:
                    if type(st) is A.AmAccess and st.mode != "read" and st.name in params:
                        w.add(st.name)
                    for f in ("body", "orelse"):
                        walk(getattr(st, f, ()) or ())

            walk(lower_to_amir(self.proc).body)
            self._written_names = w
        return w

    def _check_aliasing(self, arrays):
        """The checkers treat distinct parameters as distinct memory: two arguments whose
        bytes overlap, one of them written by the procedure, are refused (a proven program
        may race on them, e.g. a transpose called in place)."""
        written = self._written()
        spans = [(n, a, _byte_span(a)) for n, a in arrays.items() if a.shape]
        for i, (n1, a1, (lo1, hi1)) in enumerate(spans):
            for n2, a2, (lo2, hi2) in spans[i + 1:]:
                if a1.device != a2.device or not (n1 in written or n2 in written):
                    continue
                if lo1 < hi2 and lo2 < hi1:
                    raise usage(f"arguments '{n1}' and '{n2}' overlap in memory and "
                                f"{self.proc.name}() writes "
                                f"{n1 if n1 in written else n2!r}; the proof assumes "
                                "distinct parameters are distinct memory",
                                hint="pass separate arrays (copy one first)")

    def _check_asserts(self, env):
        for pred in self.proc.preds:
            try:
                ok = eval_ctl(pred, env)
            except KeyError:
                continue
            if not ok:
                line = pred.srcinfo.line if pred.srcinfo else "?"
                shown = ", ".join(f"{k}={v}" for k, v in env.items() if isinstance(k, str))
                raise usage(f"{self.proc.name}(): precondition `assert {expr_str(pred)}` "
                            f"(line {line}) does not hold for {shown}", node=pred)
