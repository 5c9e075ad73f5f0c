"""Run one SMT-LIB2 script in a fresh Z3 or cvc5 and say what it answered.

Every call builds a new solver (a new Z3 ``Solver`` in the process's one Z3 context, a new
cvc5 term manager), so nothing one obligation asserted can leak into the next. A script
must consist of the commands ``obligation_smtlib`` writes (``set-logic``, ``set-info``,
``declare-fun``/``declare-const``, ``assert``, one ``check-sat``, ``exit``); anything else
(``echo``, ``push``, a second ``check-sat``, ...) is refused before a solver sees it, so a
certificate cannot smuggle in a script that merely prints ``unsat``.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from dataclasses import dataclass

SOLVERS = ("z3", "cvc5")
ALLOWED = {"set-logic", "set-info", "declare-fun", "declare-const", "assert", "check-sat",
           "exit"}


class ScriptError(ValueError):
    """The text is not an SMT-LIB2 script of the allowed shape."""


@dataclass(frozen=True)
class Answer:
    solver: str
    result: str  # unsat | sat | unknown
    seconds: float
    reason: str = ""  # why unknown (timeout, error)


_TOK = re.compile(r'\s+|;[^\n]*|\|[^|]*\||"(?:[^"]|"")*"|[()]|[^\s()|";]+')


def normalized(text: str) -> str:
    """The script's tokens without comments and layout (what a solver reads)."""
    return " ".join(t for t in _TOK.findall(text) if t.strip() and not t.startswith(";"))


def commands(text: str) -> list[str]:
    """Heads of the top-level commands of ``text`` (``ScriptError`` when unbalanced or
    not a list of commands)."""
    if not isinstance(text, str):
        raise ScriptError(f"expected SMT-LIB2 text, found {type(text).__name__}")
    heads, depth, pos, want_head = [], 0, 0, False
    for m in _TOK.finditer(text):
        if m.start() != pos:
            raise ScriptError(f"unreadable text at character {pos}")
        pos = m.end()
        tok = m.group()
        if tok.isspace() or tok.startswith(";"):
            continue
        if tok == "(":
            if depth == 0:
                want_head = True
            depth += 1
            continue
        if tok == ")":
            depth -= 1
            if depth < 0:
                raise ScriptError(f"unbalanced ')' at character {m.start()}")
            continue
        if depth == 0:
            raise ScriptError(f"{tok!r} outside a command at character {m.start()}")
        if want_head:
            heads.append(tok)
            want_head = False
    if pos != len(text):
        raise ScriptError(f"unreadable text at character {pos}")
    if depth != 0:
        raise ScriptError("unbalanced parentheses: the script is truncated")
    return heads


def check_script(text: str) -> None:
    heads = commands(text)
    bad = sorted({h for h in heads if h not in ALLOWED})
    if bad:
        raise ScriptError(f"command(s) {', '.join(bad)} are not allowed in an obligation "
                          f"(only {', '.join(sorted(ALLOWED))})")
    if heads.count("check-sat") != 1:
        raise ScriptError(f"an obligation has exactly one (check-sat), this has "
                          f"{heads.count('check-sat')}")
    if heads and heads[-1] not in ("check-sat", "exit"):
        raise ScriptError("commands after (check-sat)")


_Z3_CONTEXT = threading.local()


def _z3_context():
    """One Z3 context per thread (making one costs ~8 ms here, a fifth of the average GEMM
    obligation's Z3 time): each script still gets its own ``Solver``, whose assertions and
    learned facts are its own; the context only interns terms and symbol names. Per thread:
    a Z3 context must not be used by two threads at once."""
    import z3

    ctx = getattr(_Z3_CONTEXT, "ctx", None)
    if ctx is None:
        ctx = _Z3_CONTEXT.ctx = z3.Context()
    return ctx


def run_z3(text: str, timeout_ms: int) -> Answer:
    import z3

    t0 = time.perf_counter()
    s = z3.Solver(ctx=_z3_context())
    s.set("timeout", max(1, int(timeout_ms)))
    try:
        s.from_string(text)
        r = str(s.check())
    except z3.Z3Exception as e:
        return Answer("z3", "unknown", time.perf_counter() - t0, f"Z3 rejected the script: {e}")
    reason = s.reason_unknown() if r == "unknown" else ""
    return Answer("z3", r, time.perf_counter() - t0, reason)


#: cvc5 strategies, tried in turn while the answer is unknown, each on the script or on its
#: equivalent with divisions under quantifiers lifted to new variables
#: (``smtlib.lift_divisions``): (lifted, options, share of the limit in ms, None: the rest).
#: The default options first (what ``cvc5 ob.smt2`` does), with a long slice: since thread
#: sets are stated without quantifiers and texts are pruned they decide every obligation of
#: the shipped specs (the slowest in 2.6 s on an idle core), and a short slice under load
#: only sends an obligation on to strategies that are slower on it. Then model-based
#: instantiation, then the lifted script (a ``mod`` of a bound variable under a negated
#: ``exists`` once defeated the default; on today's scripts the lifted form is the slowest).
#: Measured: bench/RESULTS.md
CVC5_STRATEGIES = ((False, (), 15000), (False, (("mbqi", "true"),), 10000), (True, (), None))


def run_cvc5(text: str, timeout_ms: int, lifted=None) -> Answer:
    """cvc5's answer on ``text``; ``lifted``: a function giving the lifted script (the
    strategies that need it are skipped without one)."""
    t0 = time.perf_counter()
    a = None
    lifted_text = None
    for lift, opts, share in CVC5_STRATEGIES:
        left = int(timeout_ms - (time.perf_counter() - t0) * 1000)
        if left <= 0:
            break
        if lift:
            if lifted is None:
                continue
            if lifted_text is None:
                lifted_text = lifted()
        a = _cvc5_once(lifted_text if lift else text, left if share is None
                       else min(left, share), opts)
        if a.result != "unknown" or a.reason.startswith("cvc5 rejected"):
            break
    if a is None:  # no time was left for any strategy
        return Answer("cvc5", "unknown", time.perf_counter() - t0, "no time left to run cvc5")
    return dataclasses.replace(a, seconds=time.perf_counter() - t0)


def _cvc5_once(text: str, timeout_ms: int, opts=()) -> Answer:
    import cvc5

    t0 = time.perf_counter()
    tm = cvc5.TermManager()
    slv = cvc5.Solver(tm)
    slv.setOption("tlimit-per", str(max(1, int(timeout_ms))))
    for k, v in opts:
        slv.setOption(k, v)
    sm = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(slv, sm)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "obligation")
    result, why = None, ""
    try:
        while True:
            cmd = parser.nextCommand()
            if cmd.isNull():
                break
            out = cmd.invoke(slv, sm).strip()
            if out in ("sat", "unsat"):
                result = out
            elif out.startswith("unknown"):  # cvc5 says why: "unknown (TIMEOUT)"
                result = "unknown"
                why = out[len("unknown"):].strip(" ()")
            elif out.startswith("(error"):
                return Answer("cvc5", "unknown", time.perf_counter() - t0,
                              f"cvc5 rejected the script: {out}")
    except RuntimeError as e:
        return Answer("cvc5", "unknown", time.perf_counter() - t0,
                      f"cvc5 rejected the script: {e}")
    if result is None:
        return Answer("cvc5", "unknown", time.perf_counter() - t0, "no (check-sat) answer")
    reason = ""
    if result == "unknown":
        reason = f"cvc5 answered unknown ({why.lower() or 'no reason given'})"
    return Answer("cvc5", result, time.perf_counter() - t0, reason)


def run(solver: str, text: str, timeout_ms: int, checked: bool = False,
        lifted=None) -> Answer:
    """Answer of ``solver`` (one of ``SOLVERS``) on ``text``, checked by ``check_script``
    (``checked``: the caller already did); ``lifted`` as for ``run_cvc5``."""
    if not checked:
        check_script(text)
    if solver == "z3":
        return run_z3(text, timeout_ms)
    if solver == "cvc5":
        return run_cvc5(text, timeout_ms, lifted)
    raise ValueError(f"unknown solver {solver!r} (choose from {', '.join(SOLVERS)})")


def versions() -> dict:
    out = {}
    try:
        import z3

        out["z3"] = z3.get_version_string()
    except ImportError:
        out["z3"] = None
    try:
        import cvc5

        tm = cvc5.TermManager()
        v = cvc5.Solver(tm).getVersion()
        out["cvc5"] = v.decode() if isinstance(v, bytes) else str(v)
    except ImportError:
        out["cvc5"] = None
    return out
