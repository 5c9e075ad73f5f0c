"""Scope rules (kind ``scope``): what may happen at CPU scope and what inside a kernel.

``check_scopes(proc)`` establishes, for every statement, whether it runs at CPU scope (the
host program) or CUDA scope (inside a ``CudaDeviceFunction``) and checks (reference notes
1.6, 4.2 item 7):

* parallel constructs: ``cuda_tasks`` only as the perfect nest at the top of a kernel,
  ``cuda_threads``/``CudaWarps``/barriers/``Fence``/``Arrive``/``Await`` only in CUDA, no
  ``CudaDeviceFunction`` inside another;
* calls: procs only at CPU scope; instructions only at the scope of their instruction
  timeline (``cpu_*`` at CPU, CUDA timelines in kernels);
* allocations: ``DRAM``/``CudaGmemLinear``/``CudaGridConstant`` at CPU, ``CudaRmem`` and
  shared memories in CUDA, parameter-only memories nowhere;
* accesses: ``DRAM`` only at CPU; ``CudaGmemLinear`` read/written only in CUDA (at CPU only
  passed to procs or to ``cpu_cuda_stream_instr`` instructions); grid constants read-only in
  CUDA; register and shared memories only in CUDA; tensor maps made at CPU scope.

The parser already rejects the purely syntactic cases at decoration; this pass re-checks
them because rewrites build IR directly. It assumes nothing else of the program.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..ir import nodes as N
from ..ir.memories import Memory
from ..ir.timelines import cpu_cuda_stream_instr
from .walk import Access, stmt_accesses


def check_scopes(p: N.Procedure) -> tuple[Diagnostic, ...]:
    """Check the CPU/CUDA scope rules of ``p``; one diagnostic per violation."""
    if p.is_instr:
        return ()
    c = _ScopeCheck()
    mems: dict = {}
    for prm in p.params:
        if not prm.is_data:
            continue
        mems[prm.name] = prm.mem
        if prm.mem is not None and prm.mem.space in ("rmem", "smem"):
            c.err(f"parameter '{prm.name}' is in {prm.mem}, a device memory; procedure "
                  "parameters live at CPU scope (allocate it inside the CudaDeviceFunction)",
                  prm)
    c.block(p.body, "cpu", mems, top_nest=False)
    return tuple(c.diags)


class _ScopeCheck:
    def __init__(self):
        self.diags: list[Diagnostic] = []

    def err(self, msg: str, node, hint: str | None = None) -> None:
        self.diags.append(Diagnostic.at("scope", msg, node.srcinfo, hint))

    def block(self, body, scope: str, mems: dict, top_nest: bool) -> None:
        mems = dict(mems)
        for s in body:
            self.stmt(s, scope, mems, top_nest and len(body) == 1)

    def stmt(self, s, scope: str, mems: dict, top_nest: bool) -> None:
        cuda = scope == "cuda"
        if isinstance(s, N.For):
            inner_top = False
            if isinstance(s.mode, N.CudaTasks):
                if not cuda:
                    self.err("cuda_tasks loop outside a CudaDeviceFunction", s,
                             "wrap the loop nest in `with CudaDeviceFunction(blockDim=...):`")
                elif not top_nest:
                    self.err("cuda_tasks loops must form a perfect nest at the top of the "
                             "CudaDeviceFunction", s)
                inner_top = True
            elif isinstance(s.mode, N.CudaThreads) and not cuda:
                self.err("cuda_threads loop at CPU scope; it must be inside a "
                         "CudaDeviceFunction", s)
            self.block(s.body, scope, mems, inner_top)
        elif isinstance(s, N.If):
            self.block(s.body, scope, mems, False)
            if s.orelse:
                self.block(s.orelse, scope, mems, False)
        elif isinstance(s, N.With):
            self.with_(s, scope, mems)
        elif isinstance(s, N.Alloc):
            self.alloc(s, scope)
            mems[s.name] = s.mem
        elif isinstance(s, N.BarrierAlloc):
            if not cuda:
                self.err(f"barrier '{s.name}' allocated at CPU scope; barriers live inside a "
                         "CudaDeviceFunction", s)
            mems[s.name] = s.mech
        elif isinstance(s, (N.Fence, N.Arrive, N.Await)) and not cuda:
            self.err(f"{type(s).__name__} at CPU scope; synchronization statements belong "
                     "inside a CudaDeviceFunction", s)
        elif isinstance(s, N.Call):
            self.call(s, scope)
        if isinstance(s, N.WindowStmt):
            if s.special is not None and cuda:
                self.err(f"tensor map '{s.name}' must be created at CPU scope (it is encoded "
                         "on the host and passed to the kernel)", s)
            mems[s.name] = s.special or mems.get(s.rhs.name)
        if isinstance(s, N.Call) and s.callee.instr is None:
            return  # what a proc does with its arguments is checked in the proc
        for acc in stmt_accesses(s):
            self.access(s, acc, mems.get(acc.name), scope)

    def with_(self, s: N.With, scope: str, mems: dict) -> None:
        if isinstance(s.ctx, N.CudaDeviceFunction):
            if scope == "cuda":
                self.err("CudaDeviceFunction inside a CudaDeviceFunction; kernels are launched "
                         "from CPU scope only", s)
            body = s.body
            if len(body) != 1 or not (isinstance(body[0], N.For)
                                      and isinstance(body[0].mode, N.CudaTasks)):
                bad = body[0] if body else s
                self.err("the body of a CudaDeviceFunction must be a single nest of cuda_tasks "
                         "loops", bad, "put the kernel body inside `for t in cuda_tasks(0, n):`")
            self.block(body, "cuda", mems, top_nest=True)
            return
        if scope != "cuda":
            self.err("CudaWarps outside a CudaDeviceFunction", s)
        self.block(s.body, scope, mems, False)

    def alloc(self, s: N.Alloc, scope: str) -> None:
        m = s.mem
        if m.abstract or m.alloc_scope == "none":
            self.err(f"{m} cannot be allocated; it is only a parameter/window memory", s)
        elif scope == "cuda" and m.alloc_scope == "cpu":
            self.err(f"{m} cannot be allocated inside a CudaDeviceFunction (CUDA scope); "
                     f"allocate '{s.name}' at CPU scope", s)
        elif scope == "cpu" and m.alloc_scope == "cuda":
            self.err(f"{m} allocation '{s.name}' at CPU scope; device memories are allocated "
                     "inside a CudaDeviceFunction", s, "move the allocation into the kernel body")

    def call(self, s: N.Call, scope: str) -> None:
        c = s.callee
        if c.instr is None:
            if scope == "cuda":
                self.err(f"proc {c.name}() called at CUDA scope; procs can be called only at "
                         "CPU scope", s, "call an @instr here, or inline the proc")
            return
        dev = c.instr.timeline.device
        if dev != scope:
            where = "inside a CudaDeviceFunction" if dev == "cuda" else "at CPU scope"
            self.err(f"{c.name}() has instr-tl {c.instr.timeline}; it can only be called "
                     f"{where}", s)

    def access(self, s, acc: Access, mem, scope: str) -> None:
        if not isinstance(mem, Memory):
            return
        name, mode = acc.name, acc.mode
        call = s if isinstance(s, N.Call) else None
        verb = {"r": "read", "w": "written", "rw": "read and written"}.get(mode, "used")
        if scope == "cpu":
            if mem.space == "gmem" or mem.space == "tensormap":
                if isinstance(s, N.WindowStmt):
                    return
                if call is not None and call.callee.instr.timeline == cpu_cuda_stream_instr:
                    return
                how = (f"passed to {call.callee.name}() (instr-tl "
                       f"{call.callee.instr.timeline})" if call is not None else verb)
                self.err(f"{mem} data '{name}' cannot be {how} at CPU scope; access it inside "
                         "a CudaDeviceFunction or pass it to a cpu_cuda_stream_instr "
                         "instruction", s)
            elif mem.space in ("rmem", "smem"):
                self.err(f"{mem} data '{name}' used at CPU scope; register and shared memory "
                         "exist only inside a CudaDeviceFunction", s)
            return
        if mem.space == "host":
            self.err(f"{mem} data '{name}' cannot be {verb if mode else 'used'} inside a "
                     "CudaDeviceFunction; host memory is visible only at CPU scope", s,
                     "copy it to a CudaGmemLinear tensor first")
        elif mem.space == "gridconst" and "w" in mode:
            self.err(f"grid constant '{name}' ({mem}) is read-only inside a "
                     "CudaDeviceFunction", s)
