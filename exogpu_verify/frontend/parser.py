"""Python AST -> GPU IR for ``@proc`` and ``@instr`` bodies, with type and structural checks.

``parse_function`` takes the ``ast.FunctionDef`` of a decorated function and an environment
(the caller's locals, the function's closure and globals, then the language namespace) and
returns a ``Procedure``. It establishes: every name resolves; control and data expressions are
kept apart and control expressions are quasi-affine; shapes, precisions and memories of
arguments match their parameters; parallel constructs sit where the language allows them
(kind ``scope``). It assumes nothing about synchronization: that is the checkers' job.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..errors import ExoGpuError, user_error
from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.memories import BarrierMechanism, Memory, RingBufferBy
from ..ir.srcinfo import SrcInfo
from ..ir.types import BarrierType, ControlType, ScalarType, bool_, index, int_, size
from ..ir.memories import DRAM
from ..ir.units import CollUnit
from .asserts import unsatisfiable
from .exprs import ExprParser, _describe
from .language import KEYWORDS, Keyword
from .sync import SyncParser
from .unsupported import check_constructs


@dataclass(frozen=True, slots=True)
class VarInfo:
    """What the parser knows of a name: kind is control | data | barrier."""

    kind: str
    type: object  # ControlType | TensorType | None
    mem: object = None
    shape: tuple = ()
    dims: tuple = ()  # barrier dims


class Parser(ExprParser, SyncParser):
    def __init__(self, fdef: ast.FunctionDef, env: dict, file: str, line_offset: int,
                 col_offset: int, lines: list[str], instr: N.InstrInfo | None,
                 printed: bool = False):
        self.fdef = fdef
        self.printed = printed  # text made by the printer: no Python outside the language
        self.env = env
        self.file = file
        self.line_offset = line_offset
        self.col_offset = col_offset
        self.lines = lines
        self.instr = instr
        self.vars: dict[str, VarInfo] = {}
        self.in_cuda = False

    # ------------------------------------------------------------ plumbing
    def src(self, node) -> SrcInfo:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return SrcInfo(self.file, line + self.line_offset, col + self.col_offset,
                       text=(" " * self.col_offset + text) if text is not None else None)

    def err(self, kind: str, msg: str, node, hint: str | None = None) -> ExoGpuError:
        return user_error(kind, msg, self.src(node), hint)

    def lookup_py(self, name: str, node):
        if name in self.env:
            return self.env[name]
        raise self.err("syntax", f"unknown name '{name}'", node,
                       hint="define it before use, or import it (e.g. `from exogpu_verify "
                            "import *`)")

    def eval_py(self, node, what: str):
        """Evaluate a meta-level argument (memory, unit, timeline, config) as Python."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.vars:
                raise self.err("type", f"{what} must be known when the procedure is defined; "
                               f"'{sub.id}' is a variable of the procedure", sub)
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.env[node.id]  # what eval finds first (env is its locals)
        try:
            code = compile(ast.Expression(body=node), self.file, "eval")
            return eval(code, {"__builtins__": __builtins__}, self.env)  # noqa: S307
        except NameError as e:
            raise self.err("syntax", f"unknown name in {what}: {e}", node,
                           hint="import it, e.g. `from exogpu_verify import *`") from None
        except (TypeError, ValueError) as e:
            raise self.err("type", f"invalid {what}: {e}", node) from None
        except ExoGpuError:
            raise
        except Exception as e:  # user code raised: still a located error, not a traceback
            raise self.err("type", f"evaluating {what} `{ast.unparse(node)}` raised "
                           f"{type(e).__name__}: {e}", node) from None

    def resolve_keyword(self, func: ast.expr):
        """The language keyword a call's function names, or None."""
        if isinstance(func, ast.Name):
            if func.id in self.vars:
                return None
            val = self.env.get(func.id, KEYWORDS.get(func.id))
            return val if isinstance(val, Keyword) else None
        return None

    def show(self, e) -> str:
        from ..ir.printer import expr_str

        return expr_str(e)

    def declare(self, name: str, info: VarInfo, node) -> None:
        if name in self.vars:
            raise self.err("type", f"'{name}' is already defined in this scope; shadowing is "
                           "not allowed", node, hint=f"rename the new '{name}'")
        if name in KEYWORDS:
            raise self.err("syntax", f"'{name}' is a keyword of the language", node)
        self.vars[name] = info

    # ------------------------------------------------------------ procedure
    def parse(self) -> N.Procedure:
        f = self.fdef
        a = f.args
        if a.vararg or a.kwarg or a.posonlyargs or a.kwonlyargs or a.defaults:
            raise self.err("syntax", "procedure parameters must be plain `name: type` "
                           "parameters (no defaults, *args or keyword-only)", f)
        params = tuple(self.param(arg) for arg in a.args)
        if not self.printed:  # (explains user-written Python; the printer writes none)
            check_constructs(f, self.err, lambda n: isinstance(self.env.get(n), N.Procedure))
        body = list(f.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        preds, asserts = [], []
        while body and isinstance(body[0], ast.Assert):
            s = body.pop(0)
            if s.msg is not None:
                raise self.err("syntax", "assert messages are not supported", s.msg)
            preds.append(self.cond(s.test, "assert condition"))
            asserts.append(s)
        if self.instr is None and unsatisfiable(params, preds):
            raise self.err("type", "no size satisfies the asserts of "
                           f"'{f.name}' (sizes are at least 1): a proof for every size that "
                           "satisfies them would be vacuous", asserts[0],
                           hint="fix the assert so that some sizes satisfy it")
        stmts = self.block(body, f)
        return N.Procedure(f.name, params, tuple(preds), stmts, self.instr, self.src(f))

    def param(self, arg: ast.arg) -> N.Param:
        si = self.src(arg)
        if arg.annotation is None:
            raise self.err("syntax", f"parameter '{arg.arg}' needs a type annotation, e.g. "
                           f"`{arg.arg}: size` or `{arg.arg}: f32[N] @ DRAM`", arg)
        ann = arg.annotation
        if isinstance(ann, ast.Name) and ann.id in ("size", "index", "bool"):
            val = self.env.get(ann.id)
            if ann.id == "bool" or isinstance(val, ControlType) or val is None:
                t = {"size": size, "index": index, "bool": bool_}[ann.id]
                self.declare(arg.arg, VarInfo("control", t), arg)
                return N.Param(arg.arg, t, None, si)
        ttype, mem = self.tensor_annotation(ann, allow_window=True)
        self.declare(arg.arg, VarInfo("data", ttype, mem, ttype.shape), arg)
        return N.Param(arg.arg, ttype, mem, si)

    def tensor_annotation(self, ann: ast.expr, allow_window: bool):
        mem = DRAM
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.MatMult):
            mem = self.eval_py(ann.right, "memory")
            if isinstance(mem, BarrierMechanism):
                raise self.err("type", f"{mem} is a barrier mechanism; data needs a memory "
                               "such as CudaSmemLinear", ann.right)
            if not isinstance(mem, Memory):
                raise self.err("type", f"`{ast.unparse(ann.right)}` is {_describe(mem)}, not a "
                               "memory (e.g. CudaRmem, CudaSmemLinear, CudaGmemLinear)",
                               ann.right)
            ann = ann.left
        is_window = False
        shape_nodes: list[ast.expr] = []
        base = ann
        if isinstance(ann, ast.Subscript):
            base = ann.value
            sl = ann.slice
            shape_nodes = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if isinstance(base, ast.List):
            if not allow_window:
                raise self.err("syntax", "window types `[T][...]` are only for parameters",
                               ann)
            if len(base.elts) != 1:
                raise self.err("syntax", "a window type is written `[f32][n, m]`", base)
            is_window = True
            base = base.elts[0]
        if not isinstance(base, ast.Name):
            raise self.err("syntax", f"unsupported type `{ast.unparse(ann)}`; write e.g. "
                           "`f32[N, M] @ CudaGmemLinear`", ann)
        scalar = self.lookup_py(base.id, base) if base.id not in ("size", "index") else None
        if not isinstance(scalar, ScalarType):
            raise self.err("type", f"'{base.id}' is not a scalar type (f16, bf16, f32, f64, "
                           "i8, ui8, i32)", base)
        shape = tuple(self.control(s, "tensor extent") for s in shape_nodes)
        for s, node in zip(shape, shape_nodes):
            if isinstance(s, N.Const) and s.val <= 0:
                raise self.err("type", f"tensor extent must be positive, not {s.val}", node)
        return N.TensorType(scalar, shape, is_window), mem

    # ------------------------------------------------------------ statements
    def block(self, stmts: list[ast.stmt], parent) -> tuple:
        if not stmts:
            raise self.err("syntax", "empty block", parent)
        saved = dict(self.vars)
        try:
            out = tuple(self.stmt(s) for s in stmts)
        finally:
            self.vars = saved
        return out

    def stmt(self, s: ast.stmt):
        si = self.src(s)
        if isinstance(s, ast.Pass):
            return N.Pass(si)
        if isinstance(s, ast.Assert):
            raise self.err("syntax", "assert is only allowed at the top of a procedure", s,
                           hint="move preconditions before the first statement")
        if isinstance(s, ast.AnnAssign):
            return self.alloc(s)
        if isinstance(s, ast.Assign):
            return self.assign(s)
        if isinstance(s, ast.AugAssign):
            if not isinstance(s.op, ast.Add):
                raise self.err("syntax", f"only `+=` reductions are supported, not "
                               f"`{ast.unparse(s)}`", s, hint="write x[i] = x[i] * y instead")
            name, idx = self.lvalue(s.target)
            return N.Reduce(name, idx, self.data(s.value), si)
        if isinstance(s, ast.For):
            return self.for_(s)
        if isinstance(s, ast.If):
            c = self.cond(s.test, "if condition")
            body = self.block(s.body, s)
            orelse = self.block(s.orelse, s) if s.orelse else ()
            return N.If(c, body, orelse, si)
        if isinstance(s, ast.With):
            return self.with_(s)
        if isinstance(s, ast.Expr):
            return self.expr_stmt(s)
        raise self.err("syntax", f"unsupported statement `{type(s).__name__}` in a procedure",
                       s)

    def alloc(self, s: ast.AnnAssign):
        si = self.src(s)
        if s.value is not None:
            raise self.err("syntax", "an allocation cannot have an initial value; allocate, "
                           "then assign", s)
        if not isinstance(s.target, ast.Name):
            raise self.err("syntax", "allocation target must be a name", s.target)
        name = s.target.id
        ann = s.annotation
        left = ann.left if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.MatMult) else ann
        base = left.value if isinstance(left, ast.Subscript) else left
        if isinstance(base, ast.Name) and isinstance(self.env.get(base.id), BarrierType):
            return self.barrier_alloc(s, name, left, ann)
        ttype, mem = self.tensor_annotation(ann, allow_window=False)
        if mem.abstract or mem.space == "tensormap":
            raise self.err("type", f"{mem} cannot be allocated; it is only a parameter/window "
                           "memory", ann)
        if self.in_cuda and mem.alloc_scope == "cpu":
            raise self.err("scope", f"{mem} cannot be allocated inside a CudaDeviceFunction "
                           f"(CUDA scope); allocate '{name}' at CPU scope", s)
        if not self.in_cuda and mem.alloc_scope == "cuda":
            raise self.err("scope", f"{mem} allocation '{name}' at CPU scope; device memories "
                           "are allocated inside a CudaDeviceFunction", s,
                           hint="move the allocation into the kernel body")
        if not mem.symbolic_extents or self.in_cuda:
            for e in ttype.shape:
                if const_value(e) is None:
                    raise self.err("type", f"{mem} allocation '{name}' requires a constant "
                                   f"shape, not [{', '.join(self.show(x) for x in ttype.shape)}]",
                                   s, hint="device allocations must have constant extents")
            # constant extents such as `2 * BM` are folded: later passes read ints
            ttype = N.TensorType(ttype.scalar, tuple(_fold(e) for e in ttype.shape),
                                 ttype.is_window)
        self.declare(name, VarInfo("data", ttype, mem, ttype.shape), s.target)
        return N.Alloc(name, ttype, mem, si)

    def barrier_alloc(self, s, name, left, ann):
        si = self.src(s)
        if not (isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.MatMult)):
            raise self.err("type", f"barrier '{name}' needs a mechanism: `{name}: barrier @ "
                           "CudaMbarrier`", ann)
        mech = self.eval_py(ann.right, "barrier mechanism")
        if not isinstance(mech, BarrierMechanism):
            raise self.err("type", f"`{ast.unparse(ann.right)}` is not a barrier mechanism "
                           "(CudaMbarrier, CudaMbarrierPreArrive(k), Sm80_CommitGroup, "
                           "Sm90_TmaCommitGroup, Sm90_WgmmaCommitGroup, CudaClusterSync)",
                           ann.right)
        dims = []
        if isinstance(left, ast.Subscript):
            elts = left.slice.elts if isinstance(left.slice, ast.Tuple) else [left.slice]
            for d in elts:
                depth = None
                if isinstance(d, ast.BinOp) and isinstance(d.op, ast.MatMult):
                    rb = self.eval_py(d.right, "ring buffer annotation")
                    if not isinstance(rb, RingBufferBy):
                        raise self.err("type", "a barrier dimension annotation must be "
                                       "ring_buffer_by(depth)", d.right)
                    depth = rb.depth
                    d = d.left
                ext = self.control(d, "barrier extent")
                if isinstance(ext, N.Const) and ext.val <= 0:
                    raise self.err("type", "barrier extent must be positive", d)
                dims.append(N.BarrierDim(ext, depth))
        if not self.in_cuda:
            raise self.err("scope", f"barrier '{name}' allocated at CPU scope; barriers live "
                           "inside a CudaDeviceFunction", s)
        self.declare(name, VarInfo("barrier", mech, None, (), tuple(dims)), s.target)
        return N.BarrierAlloc(name, tuple(dims), mech, si)

    def lvalue(self, t: ast.expr):
        if isinstance(t, ast.Name):
            info = self.vars.get(t.id)
            if info is None:
                self.lookup_py(t.id, t) if t.id not in self.env else None
                raise self.err("type", f"assignment to '{t.id}', which is not allocated", t,
                               hint=f"declare it first, e.g. `{t.id}: f32 @ CudaRmem`")
            if info.kind != "data":
                what = "size" if info.type == size else info.kind
                raise self.err("type", f"cannot assign to {what} '{t.id}'; only data can be "
                               "assigned", t)
            if info.shape:
                raise self.err("type", f"'{t.id}' is an array; assign to an element", t)
            return t.id, ()
        if isinstance(t, ast.Subscript):
            if isinstance(t.value, ast.Name):
                info = self.vars.get(t.value.id)
                if info is not None and info.kind != "data":
                    raise self.err("type", f"cannot assign to {info.kind} '{t.value.id}'", t)
            return self.point_access(t)
        raise self.err("syntax", f"unsupported assignment target `{ast.unparse(t)}`", t)

    def assign(self, s: ast.Assign):
        si = self.src(s)
        if len(s.targets) != 1:
            raise self.err("syntax", "chained assignment is not supported", s)
        t, v = s.targets[0], s.value
        special = None
        rhs = v
        if isinstance(v, ast.BinOp) and isinstance(v.op, ast.MatMult):
            special = self.eval_py(v.right, "window memory")
            if not isinstance(special, Memory) or special.space != "tensormap":
                raise self.err("type", "`w = A[...] @ M` needs a special window memory such as "
                               "Sm90_tensorMap(swizzle, *box)", v.right)
            rhs = v.left
        is_window = special is not None or (
            isinstance(rhs, ast.Subscript) and any(isinstance(e, ast.Slice) for e in (
                rhs.slice.elts if isinstance(rhs.slice, ast.Tuple) else [rhs.slice])))
        if is_window:
            if not isinstance(t, ast.Name):
                raise self.err("syntax", "a window statement binds a new name: `w = A[0:8, :]`",
                               t)
            if isinstance(rhs, ast.Name):
                rhs = ast.Subscript(value=rhs, slice=ast.Slice(), ctx=ast.Load(),
                                    lineno=rhs.lineno, col_offset=rhs.col_offset)
            w = self.window(rhs)
            src_info = self.vars[w.name]
            mem = src_info.mem
            if special is not None:
                if src_info.mem.space != "gmem" or src_info.type.is_window:
                    raise self.err("type", f"a tensor map is made from a dense CudaGmemLinear "
                                   f"tensor, not '{w.name}' in {src_info.mem}", rhs)
                box = special.args[1:]
                if w.rank != len(box):
                    raise self.err("type", f"tensor map window has rank {w.rank} but the box "
                                   f"has rank {len(box)}", v,
                                   hint="Consider left-padding the box with 1s")
                mem = special
            shape = self.window_shape(w)
            self.declare(t.id, VarInfo("data", N.TensorType(w.type, shape, True), mem, shape), t)
            return N.WindowStmt(t.id, w, special, si)
        name, idx = self.lvalue(t)
        return N.Assign(name, idx, self.data(v), si)

    def window_shape(self, w: N.WindowExpr) -> tuple:
        out = []
        for a in w.idx:
            if isinstance(a, N.Interval):
                if isinstance(a.lo, N.Const) and a.lo.val == 0:
                    out.append(a.hi)
                elif isinstance(a.lo, N.Const) and isinstance(a.hi, N.Const):
                    out.append(N.Const(a.hi.val - a.lo.val, a.hi.type))
                else:
                    out.append(N.BinOp("-", a.hi, a.lo, index))
        return tuple(out)

    def window(self, node: ast.expr) -> N.WindowExpr:
        """A window ``A[i, lo:hi, :]`` (or a bare tensor name: the whole tensor)."""
        si = self.src(node)
        if isinstance(node, ast.Name):
            info = self.vars.get(node.id)
            if info is None or info.kind != "data":
                if info is None:
                    self.lookup_py(node.id, node)
                raise self.err("type", f"'{node.id}' is not a tensor", node)
            idx = tuple(N.Interval(N.Const(0, _int()), e) for e in info.shape)
            return N.WindowExpr(node.id, idx, info.type.scalar, si)
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
            raise self.err("type", f"expected a tensor or a window, got `{ast.unparse(node)}`",
                           node)
        name = node.value.id
        info = self.vars.get(name)
        if info is None or info.kind != "data":
            if info is None:
                self.lookup_py(name, node.value)
            raise self.err("type", f"'{name}' is not a tensor", node.value)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(elts) != len(info.shape):
            raise self.err("type", f"'{name}' has {len(info.shape)} dimension(s) but the window "
                           f"gives {len(elts)}", node)
        idx = []
        for e, ext in zip(elts, info.shape):
            if isinstance(e, ast.Slice):
                if e.step is not None:
                    raise self.err("syntax", "window slices cannot have a step", e)
                lo = self.control(e.lower, "window bound") if e.lower else N.Const(0, _int())
                hi = self.control(e.upper, "window bound") if e.upper else ext
                idx.append(N.Interval(lo, hi, self.src(e)))
            else:
                idx.append(N.Point(self.control(e, "window index"), self.src(e)))
        return N.WindowExpr(name, tuple(idx), info.type.scalar, si)

    def for_(self, s: ast.For):
        si = self.src(s)
        if s.orelse:
            raise self.err("syntax", "for-else is not supported", s)
        if not isinstance(s.target, ast.Name):
            raise self.err("syntax", "a loop iterates one name: `for i in seq(0, n):`", s.target)
        it = s.iter
        kw = self.resolve_keyword(it.func) if isinstance(it, ast.Call) else None
        if kw not in (KEYWORDS["seq"], KEYWORDS["cuda_tasks"], KEYWORDS["cuda_threads"]):
            raise self.err("syntax", f"loops must be `seq(lo, hi)`, `cuda_tasks(lo, hi)` or "
                           f"`cuda_threads(0, n, unit=U)`, not `{ast.unparse(it)}`", it)
        pos = list(it.args)
        kws = {k.arg: k.value for k in it.keywords}
        if len(pos) != 2:
            raise self.err("syntax", f"{kw.name} takes (lo, hi) bounds", it)
        lo = self.control(pos[0], "loop bound")
        hi = self.control(pos[1], "loop bound")
        if kw is KEYWORDS["seq"]:
            unroll = kws.pop("pragma_unroll", None)
            if kws:
                raise self.err("syntax", f"unknown seq() option {sorted(kws)}", it)
            uv = None
            if unroll is not None:
                uv = self.eval_py(unroll, "pragma_unroll")
                if not isinstance(uv, int) or uv < 0:
                    raise self.err("type", "pragma_unroll must be a non-negative int", unroll)
            mode = N.Seq(uv)
        elif kw is KEYWORDS["cuda_tasks"]:
            if kws:
                raise self.err("syntax", "cuda_tasks takes no options", it)
            if not self.in_cuda:
                raise self.err("scope", "cuda_tasks loop outside a CudaDeviceFunction", s,
                               hint="wrap the loop nest in `with CudaDeviceFunction(blockDim=...):`")
            mode = N.CudaTasks()
        else:
            if not self.in_cuda:
                raise self.err("scope", "cuda_threads loop at CPU scope; it must be inside a "
                               "CudaDeviceFunction", s)
            unit_node = kws.pop("unit", None)
            if kws:
                raise self.err("syntax", f"unknown cuda_threads() option {sorted(kws)}", it)
            unit = self.eval_py(unit_node, "collective unit") if unit_node is not None else None
            if unit is None:
                from ..ir.units import cuda_thread as unit
            if not isinstance(unit, CollUnit):
                raise self.err("type", f"unit must be a collective unit (cuda_thread, cuda_warp, "
                               f"cuda_warpgroup, ...), not {_describe(unit)}", unit_node)
            if const_value(lo) != 0:
                raise self.err("type", "cuda_threads loops start at 0", pos[0])
            if const_value(hi) is None or const_value(hi) <= 0:
                raise self.err("type", "cuda_threads loop count must be a positive constant",
                               pos[1])
            lo, hi = _fold(lo), _fold(hi)  # `256 / count` with a Python int: a constant
            mode = N.CudaThreads(unit)
        if self.instr is not None and not isinstance(mode, N.Seq):
            raise self.err("scope", "instruction bodies are sequential; use seq loops", s)
        saved = dict(self.vars)
        self.declare(s.target.id, VarInfo("control", index), s.target)
        try:
            body = self.block(s.body, s)
        finally:
            self.vars = saved
        return N.For(s.target.id, lo, hi, mode, body, si)

    def with_(self, s: ast.With):
        si = self.src(s)
        if len(s.items) != 1 or s.items[0].optional_vars is not None:
            raise self.err("syntax", "use `with CudaDeviceFunction(...):` or "
                           "`with CudaWarps(...):` (one context, no `as`)", s)
        ctx = self.eval_py(s.items[0].context_expr, "with-block context")
        if self.instr is not None:
            raise self.err("scope", "instruction bodies cannot contain with-blocks", s)
        if isinstance(ctx, N.CudaDeviceFunction):
            if self.in_cuda:
                raise self.err("scope", "CudaDeviceFunction inside a CudaDeviceFunction; kernels "
                               "are launched from CPU scope only", s)
            self.in_cuda = True
            try:
                body = self.block(s.body, s)
            finally:
                self.in_cuda = False
            self.check_task_nest(body, s)
            return N.With(ctx, body, si)
        if isinstance(ctx, N.CudaWarps):
            if not self.in_cuda:
                raise self.err("scope", "CudaWarps outside a CudaDeviceFunction", s)
            return N.With(ctx, self.block(s.body, s), si)
        raise self.err("syntax", f"unsupported with-block context {_describe(ctx)}",
                       s.items[0].context_expr)

    def check_task_nest(self, body, s):
        """The body of a CudaDeviceFunction is a perfect nest of one or more cuda_tasks loops."""
        stmts = body
        depth = 0
        while True:
            if len(stmts) != 1 or not (isinstance(stmts[0], N.For)
                                       and isinstance(stmts[0].mode, N.CudaTasks)):
                if depth == 0:
                    bad = stmts[0] if len(stmts) == 1 or not isinstance(stmts[0], N.For) \
                        else stmts[1]
                    raise user_error("scope", "the body of a CudaDeviceFunction must be a single "
                                     "nest of cuda_tasks loops", bad.srcinfo,
                                     hint="put the kernel body inside `for t in cuda_tasks(0, n):`")
                for st in stmts:
                    for sub in _walk(st):
                        if isinstance(sub, N.For) and isinstance(sub.mode, N.CudaTasks):
                            raise user_error("scope", "cuda_tasks loops must form a perfect nest "
                                             "at the top of the CudaDeviceFunction",
                                             sub.srcinfo)
                return
            depth += 1
            stmts = stmts[0].body

    def expr_stmt(self, s: ast.Expr):
        v = s.value
        if isinstance(v, ast.BinOp) and isinstance(v.op, ast.RShift):
            head, targets = v, []
            while isinstance(head, ast.BinOp) and isinstance(head.op, ast.RShift):
                targets.insert(0, head.right)
                head = head.left
            if not isinstance(head, ast.Call):
                raise self.err("syntax", f"`{ast.unparse(v)}` is not a statement; `>>` follows "
                               "Arrive(...) or an instruction call", v)
            kw = self.resolve_keyword(head.func)
            if kw is KEYWORDS["Arrive"]:
                return self.arrive(s, head, targets)
            return self.call(s, head, targets)
        if isinstance(v, ast.Call):
            kw = self.resolve_keyword(v.func)
            if kw is KEYWORDS["Fence"]:
                return self.fence(s, v)
            if kw is KEYWORDS["Await"]:
                return self.await_(s, v)
            if kw is KEYWORDS["Arrive"]:
                raise self.err("syntax", "Arrive needs a barrier target: "
                               "`Arrive(cuda_in_order) >> z[i]`", v)
            return self.call(s, v, [])
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            raise self.err("syntax", "docstrings are only allowed as the first statement", s)
        raise self.err("syntax", f"expression `{ast.unparse(v)}` is not a statement", s)


def _int():
    return int_


def _fold(e):
    """A constant control expression as one ``Const`` (kept as is when already one)."""
    if isinstance(e, N.Const):
        return e
    return N.Const(const_value(e), int_, e.srcinfo)


def _walk(s):
    yield s
    for attr in ("body", "orelse"):
        for c in getattr(s, attr, ()) or ():
            yield from _walk(c)
