"""``@proc`` and ``@instr``: parse a decorated Python function's source into a ``Procedure``.

Free names are resolved at decoration time, innermost first: the caller's local variables
(so a Python function can generate kernels from its arguments), the function's closure and
globals, and finally the language namespace. ``parse_proc_source`` does the same from a
string (used by tests and by the printer round trip).
"""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import textwrap
from collections import ChainMap
from dataclasses import replace

from ..errors import ExoGpuError, user_error
from ..ir import nodes as N
from ..ir.srcinfo import SrcInfo
from ..ir.timelines import InstrTL, cuda_in_order_instr
from ..ir.units import CollUnit, cuda_thread, standalone_thread
from ..ir.memories import BarrierMechanism
from .namespace import language_namespace
from .parser import Parser


def _environment(fn, caller_frame) -> ChainMap:
    closure = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:
                pass
    local = dict(caller_frame.f_locals) if caller_frame is not None else {}
    return ChainMap(local, closure, fn.__globals__, language_namespace())


def _function_ast(fn):
    try:
        lines, start = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError):
        raise user_error("syntax", f"cannot read the source of {fn.__qualname__}: @proc and "
                         "@instr functions must live in a file", None,
                         hint="define it in a .py module, or use parse_proc_source(text)") from None
    src = "".join(lines)
    dedented = textwrap.dedent(src)
    indent = len(src.splitlines()[0]) - len(dedented.splitlines()[0])
    module = ast.parse(dedented)
    fdef = module.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise user_error("syntax", "@proc must decorate a plain `def`", None)
    return fdef, file, start - 1, indent, dedented.splitlines()


def _build(fn, caller_frame, instr_info, tools=None):
    fdef, file, line_off, col_off, lines = _function_ast(fn)
    env = _environment(fn, caller_frame)
    p = Parser(fdef, env, file, line_off, col_off, lines, instr_info).parse()
    return replace(p, module=fn.__globals__, tools=tools)


def proc_decorator(tools: N.ProcedureTools | None = None):
    """A ``@proc`` whose procedures carry ``tools`` (``p.verify()``, ``p.find()``, ...).

    The package facade passes its ``ProcedureTools``; ``proc`` below carries none.
    """

    def proc(fn) -> N.Procedure:
        """Parse ``fn`` into a procedure of the language (raises ``ExoGpuError`` when
        malformed). Free names resolve in the caller's locals, the function's closure and
        globals, then the language."""
        frame = inspect.currentframe().f_back
        try:
            return _build(fn, frame, None, tools)
        finally:
            del frame

    return proc


proc = proc_decorator(None)


def instr(timeline: InstrTL = cuda_in_order_instr, unit: CollUnit | None = None,
          barrier: BarrierMechanism | None = None, codegen=None, *,
          distributed: dict | None = None, atomic=(), includes=(), checks=()):
    """Declare a hardware instruction by its sequential body and its execution facts.

    ``timeline``: instruction timeline; ``unit``: collective unit that must execute it
    (default ``cuda_thread`` for CUDA timelines, the host thread for CPU ones); ``barrier``:
    the mechanism it completes on (the call then needs ``>> z[...]``); ``codegen``: a format
    string over parameter names, or a callable ``(args: dict) -> str``; ``distributed``:
    ``{param: (unit, ...)}``, one unit per leading dimension of that parameter sharded across
    the executing collective (a multicast destination with one shard per CTA is
    ``{"dst": (cuda_cta_in_cluster,)}``); ``atomic``: parameters accessed atomically;
    ``checks``: declared preconditions on the arguments (``exogpu_verify.ir.checks``:
    TMA tensor-map copies, wgmma descriptor operands, alignment, register counts).
    """
    frame = inspect.currentframe().f_back
    info = _instr_info(timeline, unit, barrier, codegen, distributed, atomic, includes, frame,
                       checks)

    def deco(fn):
        try:
            p = _build(fn, frame, info)
        except ExoGpuError:
            raise
        for pname, _ in info.distributed:
            prm = p.param(pname)
            if prm is None or not prm.is_data:
                raise user_error("type", f"@instr distributed={{{pname!r}: ...}} names no data "
                                 f"parameter of {p.name}", p.srcinfo)
        for pname in info.atomic:
            if p.param(pname) is None:
                raise user_error("type", f"@instr atomic names no parameter '{pname}' of "
                                 f"{p.name}", p.srcinfo)
        for chk in info.checks:
            for field in ("tmap", "smem", "param"):
                pname = getattr(chk, field, None)
                if pname is not None and p.param(pname) is None:
                    raise user_error("type", f"@instr checks: {type(chk).__name__} names no "
                                     f"parameter '{pname}' of {p.name}", p.srcinfo)
        return p

    return deco


def _instr_info(timeline, unit, barrier, codegen, distributed, atomic, includes, frame,
                checks=()):
    si = SrcInfo(frame.f_code.co_filename, frame.f_lineno, 0) if frame is not None else None
    if not isinstance(timeline, InstrTL):
        raise user_error("type", f"@instr timeline must be an instruction timeline "
                         f"(cuda_in_order_instr, Sm80_cp_async_instr, ...), not {timeline!r}", si)
    if unit is None:
        unit = cuda_thread if timeline.device == "cuda" else standalone_thread
    if not isinstance(unit, CollUnit):
        raise user_error("type", f"@instr unit must be a collective unit, not {unit!r}", si)
    if barrier is not None and not isinstance(barrier, BarrierMechanism):
        raise user_error("type", f"@instr barrier must be a barrier mechanism, not {barrier!r}",
                         si)
    if codegen is not None and not isinstance(codegen, str) and not callable(codegen):
        raise user_error("type", "@instr codegen must be a format string or a callable", si)
    dist = []
    for k, v in (distributed or {}).items():
        units = tuple(v) if isinstance(v, (tuple, list)) else (v,)
        if not all(isinstance(u, CollUnit) for u in units):
            raise user_error("type", f"@instr distributed[{k!r}] must be collective unit(s)", si)
        dist.append((k, units))
    atomic = (atomic,) if isinstance(atomic, str) else tuple(atomic)
    from ..ir.checks import CHECK_TYPES

    checks = tuple(checks or ())
    for chk in checks:
        if not isinstance(chk, CHECK_TYPES):
            raise user_error("type", f"@instr checks must be instruction preconditions "
                             f"({', '.join(t.__name__ for t in CHECK_TYPES)}), not {chk!r}", si)
    return N.InstrInfo(timeline, unit, barrier, codegen,
                       codegen if isinstance(codegen, str) else None, tuple(dist), atomic,
                       tuple(includes), checks)


def parse_proc_source(text: str, env: dict | None = None, file: str = "<string>",
                      instr_info: N.InstrInfo | None = None,
                      tools: N.ProcedureTools | None = None,
                      printed: bool = False) -> N.Procedure:
    """Parse the first ``def`` in ``text`` as a procedure (an ``@instr(...)`` decorator line
    is evaluated, any other decorator ignored).

    ``env`` supplies free names on top of the language namespace; ``tools`` is stored on the
    result (the facade's ``parse_proc_source`` passes its own). ``printed``: the text is
    ``print_proc``'s (a rewrite's result re-checked), so the pass that explains Python
    constructs outside the language is skipped; every rule of the language still applies.
    """
    text = textwrap.dedent(text)
    _remember_source(text, file)
    try:
        module = ast.parse(text, filename=file)
    except SyntaxError as e:
        raise user_error("syntax", f"Python syntax error: {e.msg}",
                         SrcInfo(file, e.lineno or 0, (e.offset or 1) - 1,
                                 text=e.text)) from None
    fdefs = [s for s in module.body if isinstance(s, ast.FunctionDef)]
    if not fdefs:
        raise user_error("syntax", "no function definition found", SrcInfo(file, 1, 0))
    fdef = fdefs[0]
    if instr_info is None:
        instr_info = _decorator_instr(fdef, env or {}, file, text.splitlines())
    scope = ChainMap(dict(env or {}), language_namespace())
    p = Parser(fdef, scope, file, 0, 0, text.splitlines(), instr_info, printed).parse()
    return p if tools is None else replace(p, tools=tools)


def _remember_source(text: str, file: str) -> None:
    """Let diagnostics show excerpts of source text that is not a file on disk.

    ``Diagnostic`` keeps file and line but not the line's text, and renders excerpts through
    ``linecache``; entries without an mtime are never evicted by ``linecache.checkcache``.
    """
    if not os.path.exists(file):
        linecache.cache[file] = (len(text), None, text.splitlines(True), file)


def _decorator_instr(fdef: ast.FunctionDef, env: dict, file: str = "<string>",
                     lines: list[str] | None = None):
    """For source text: an ``@instr(...)`` decorator is evaluated; ``@proc`` means none."""
    for d in fdef.decorator_list:
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "instr":
            ns = ChainMap(dict(env), language_namespace())
            line = lines[d.lineno - 1] if lines and 0 < d.lineno <= len(lines) else None
            si = SrcInfo(file, d.lineno, d.col_offset, text=line)

            def ev(node):
                try:
                    return eval(compile(ast.Expression(node), "<decorator>", "eval"), {}, ns)  # noqa
                except NameError as e:
                    raise user_error("syntax", f"unknown name in the @instr decorator: {e}",
                                     si) from None
                except Exception as e:  # user code in the decorator: a located error
                    raise user_error("type", f"evaluating the @instr decorator raised "
                                     f"{type(e).__name__}: {e}", si) from None

            kwargs = {k.arg: ev(k.value) for k in d.keywords}
            args = [ev(a) for a in d.args]
            info = _instr_args(args, kwargs)
            # _instr_info reports at the caller frame; from text, point at the decorator
            try:
                return _instr_info(*info[:7], None, info[7])
            except ExoGpuError as e:
                raise user_error(e.diagnostic.kind, e.diagnostic.message, si) from None
    return None


def _instr_args(args, kwargs):
    names = ["timeline", "unit", "barrier", "codegen"]
    vals = dict(zip(names, args))
    vals.update(kwargs)
    return (vals.get("timeline", cuda_in_order_instr), vals.get("unit"), vals.get("barrier"),
            vals.get("codegen"), vals.get("distributed"), vals.get("atomic", ()),
            vals.get("includes", ()), vals.get("checks", ()))
