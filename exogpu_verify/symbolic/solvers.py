"""Run one SMT-LIB2 script in a fresh Z3 or cvc5 and say what it answered.

Every call builds a new solver (a new Z3 ``Solver`` in the process's one Z3 context, a new
cvc5 term manager), so nothing one obligation asserted can leak into the next. A script
must consist of the commands ``obligation_smtlib`` writes (``set-logic``, ``set-info``,
``declare-fun``/``declare-const``, ``assert``, one ``check-sat``, ``exit``); anything else
(``echo``, ``push``, a second ``check-sat``, ...) is refused before a solver sees it, so a
certificate cannot smuggle in a script that merely prints ``unsat``.
"""

from __future__ import annotations

import contextlib
import contextvars
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
    strategy: str = ""  # cvc5: the strategy that answered (``strategy_name``), "" the default


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
#: cvc5's time on one obligation is heavy-tailed in its random seed: on the GEMMs' hardest
#: obligations most seeds answer ``unsat`` within 1-4 s and some not within 10 s (the
#: 2x1-cluster GEMM's WAR sA: seeds 1 and 3 in 1.3-2.2 s, seeds 0, 2, 4, 5 not in 10 s), and
#: one cvc5 process repeats a run at varying speed. So short restarts with other seeds come
#: first (8 s: about twice the slowest answer seen, 4.2 s on a loaded machine, so a loaded
#: machine rarely needs a restart), then the lifted script, model-based instantiation, and
#: longer slices. An ``unsat`` under any seed or option is a proof (a seed only steers the
#: search); a ``sat`` ends the search and is reported. Measured: bench/RESULTS.md
CVC5_STRATEGIES = (
    (False, (), 8000),
    (False, (("seed", "1"),), 8000),
    (False, (("seed", "3"),), 8000),
    (True, (), 15000),
    (False, (("seed", "6"),), 15000),
    (False, (("mbqi", "true"),), 10000),
    (True, (("seed", "3"),), 30000),
    (False, (("seed", "2"),), 30000),
    (False, (), None),
)


def strategy_name(lifted: bool, opts) -> str:
    """How a certificate names a cvc5 strategy: its command-line options, with ``lifted``
    for the lifted script ("" is cvc5's defaults on the script itself)."""
    parts = ["lifted"] if lifted else []
    parts += [f"--{k}" if v == "true" else f"--{k}={v}" for k, v in opts]
    return " ".join(parts)


#: the strategy to try first per script text (a certificate's record of the one that
#: answered, see ``preferring``); never a new option: only names of ``CVC5_STRATEGIES``
_FIRST: contextvars.ContextVar = contextvars.ContextVar("exogpu_cvc5_first", default=None)


@contextlib.contextmanager
def preferring(first: dict):
    """While re-checking: ``first`` maps script texts to the ``strategy_name`` that decided
    them when proving, tried before the usual order (a name that is not one of
    ``CVC5_STRATEGIES`` is ignored: a certificate cannot choose cvc5's options). It only
    saves time: an ``unsat`` under any of the strategies is a proof."""
    token = _FIRST.set(first)
    try:
        yield
    finally:
        _FIRST.reset(token)


def _ordered_strategies(text: str):
    first = (_FIRST.get() or {}).get(text)
    names = [strategy_name(lift, opts) for lift, opts, _ in CVC5_STRATEGIES]
    if not first or first not in names or first == names[0]:
        return CVC5_STRATEGIES
    k = names.index(first)
    lift, opts, _ = CVC5_STRATEGIES[k]
    return ((lift, opts, CVC5_STRATEGIES[k][2] or 60000),) + CVC5_STRATEGIES


def run_cvc5(text: str, timeout_ms: int, lifted=None) -> Answer:
    """cvc5's answer on ``text``; ``lifted``: a function giving the lifted script (the
    strategies that need it are skipped without one). The answer names the strategy that
    gave it (``Answer.strategy``)."""
    t0 = time.perf_counter()
    a = None
    lifted_text = None
    for lift, opts, share in _ordered_strategies(text):
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
        a = dataclasses.replace(a, strategy=strategy_name(lift, opts))
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
