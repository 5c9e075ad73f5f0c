"""Python constructs a procedure body cannot contain, each named with the fix.

A proc body is a program of the language written in Python syntax, not Python that runs at
decoration time. Before parsing, ``check_constructs`` walks the body and reports the first
construct of Python that has no meaning in the language (``while``, ``break``, ``return``,
comprehensions, lambdas, nested functions, exceptions, imports, ...), so the user reads what
they wrote and how to express it, instead of a downstream "unknown name".
"""

from __future__ import annotations

import ast

_USE_FOR = "use a bounded loop: `for i in seq(lo, hi):` (or cuda_tasks / cuda_threads)"
_PYTHON_BEFORE = ("compute it in Python before the `def` (a global, or a variable of the "
                  "function that builds the proc) and use its name in the body")

#: statement class -> (what it is, how to write it instead)
_STATEMENTS: dict[type, tuple[str, str]] = {
    ast.While: ("`while` loops are not part of the language: every loop has bounds fixed by "
                "sizes and constants, so the checkers can reason about all its iterations",
                _USE_FOR + "; an early exit becomes an `if` inside the loop"),
    ast.Break: ("`break` is not part of the language (loops run all their iterations)",
                "guard the rest of the loop body with an `if` on the loop variable"),
    ast.Continue: ("`continue` is not part of the language",
                   "guard the rest of the loop body with an `if` on the loop variable"),
    ast.Return: ("`return` is not part of the language: a proc returns nothing; it writes "
                 "its results into its tensor parameters", "write the result into an output "
                 "parameter (`C[i] = ...`) and drop the `return`"),
    ast.FunctionDef: ("a nested `def` inside a proc",
                      "define it at module level, decorated with @proc (or @instr), and call "
                      "it; or use a Python function outside the proc to generate the body"),
    ast.AsyncFunctionDef: ("an `async def` inside a proc", "define procs at module level"),
    ast.ClassDef: ("a `class` inside a proc", "define it outside the proc"),
    ast.Try: ("`try` is not part of the language (a proc raises no exceptions)",
              "remove it; check preconditions with `assert` at the top of the proc"),
    ast.Raise: ("`raise` is not part of the language (a proc raises no exceptions)",
                "state the precondition as an `assert` at the top of the proc"),
    ast.Import: ("`import` inside a proc", "import at module level; the proc sees the "
                 "module's names"),
    ast.ImportFrom: ("`from ... import` inside a proc", "import at module level; the proc "
                     "sees the module's names"),
    ast.Global: ("`global` inside a proc", "procs read module-level names directly and "
                 "write only their tensor parameters and allocations"),
    ast.Nonlocal: ("`nonlocal` inside a proc", "procs write only their tensor parameters "
                   "and allocations"),
    ast.Delete: ("`del` inside a proc", "allocations end with their enclosing block; remove "
                 "the `del`"),
    ast.AsyncFor: ("`async for` inside a proc", _USE_FOR),
    ast.AsyncWith: ("`async with` inside a proc",
                    "use `with CudaDeviceFunction(...)` or `with CudaWarps(...)`"),
}
if hasattr(ast, "Match"):
    _STATEMENTS[ast.Match] = ("`match` is not part of the language",
                              "use `if` / `else` on control expressions")
if hasattr(ast, "TryStar"):
    _STATEMENTS[ast.TryStar] = _STATEMENTS[ast.Try]

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _expression_problem(node: ast.AST, proc_name: str, is_proc):
    """(message, hint) for an expression construct the language lacks, or None."""
    if isinstance(node, ast.Lambda):
        return ("a `lambda` inside a proc: the body is the program, not Python run at "
                "decoration time", "write the computation inline, or " + _PYTHON_BEFORE)
    if isinstance(node, _COMPREHENSIONS):
        kind = "generator expression" if isinstance(node, ast.GeneratorExp) else \
            "comprehension"
        return (f"a {kind} inside a proc: the body is the program, not Python run at "
                "decoration time", "write a `for i in seq(lo, hi):` loop that assigns each "
                "element, or " + _PYTHON_BEFORE)
    if isinstance(node, (ast.Yield, ast.YieldFrom)):
        return ("`yield` inside a proc (a proc is not a generator)",
                "write results into an output parameter")
    if isinstance(node, ast.Await):
        return ("`await` inside a proc", "synchronize with `Await(z[i], L, n)` statements")
    if isinstance(node, ast.NamedExpr):
        return ("an assignment expression (`:=`) inside a proc",
                "assign in its own statement: `x[i] = ...`")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == proc_name and not is_proc(proc_name):
        return (f"recursion: `{proc_name}` calls itself; procs cannot be recursive (a "
                "kernel's code is fixed when it is defined)", "write the repetition as a "
                "`for` loop, or have a Python function build one proc per level and call "
                "the next one")
    return None


def _walk_in_order(node: ast.AST):
    """Every node under ``node`` in source order, depth first (``ast.walk`` is breadth
    first); an explicit stack, since nested generators cost their depth per node."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


def check_constructs(fdef: ast.FunctionDef, err, is_proc) -> None:
    """Raise ``err(kind, message, node, hint)`` for the first construct of ``fdef``'s body
    that the language does not have (kind ``syntax``). ``is_proc(name)`` says whether a name
    already resolves to a procedure (then a call to the function's own name calls that one,
    which is not recursion)."""
    for st in fdef.body:
        for node in _walk_in_order(st):
            found = _STATEMENTS.get(type(node))
            if found is None:
                found = _expression_problem(node, fdef.name, is_proc)
            if found is not None:
                raise err("syntax", found[0], node, hint=found[1])
