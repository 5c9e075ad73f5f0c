"""isl sets -> Z3 formulas and SMT-LIB2 text, for the second opinion and for certificates.

A set is a union of basic sets; each basic set is a conjunction of integer linear
constraints over parameters, set dimensions and *divs*. A div with an explicit definition
``floor(e / d)`` becomes an integer ``q`` with ``d*q <= e < d*q + d``; one without is an
existential integer. The formula is satisfiable iff the set is non-empty.
"""

from __future__ import annotations

from fractions import Fraction

import islpy as isl
import z3

_DT = isl.dim_type


def _frac(v) -> Fraction:
    return Fraction(str(v.to_str()))


def set_to_z3(s: isl.Set, prefix: str = "") -> tuple:
    """(formula, {name: z3 var}) with parameters and set dims as free integer variables."""
    names: dict = {}

    def var(name):
        if name not in names:
            names[name] = z3.Int(name)
        return names[name]

    sp = s.get_space()
    pnames = [sp.get_dim_name(_DT.param, i) or f"p{i}" for i in range(sp.dim(_DT.param))]
    snames = [f"{prefix}x{i}" for i in range(sp.dim(_DT.set))]
    disj = []
    for bi, bs in enumerate(s.get_basic_sets()):
        nd = bs.dim(_DT.div)
        dvars = [var(f"{prefix}d{bi}_{k}") for k in range(nd)]

        def term(coef, set_type, const, scale):
            t = z3.IntVal(int(const * scale))
            for i, n in enumerate(pnames):
                c = coef(_DT.param, i) * scale
                if c:
                    t = t + int(c) * var(n)
            for i, n in enumerate(snames):
                c = coef(set_type, i) * scale
                if c:
                    t = t + int(c) * var(n)
            for k in range(nd):
                c = coef(_DT.div, k) * scale
                if c:
                    t = t + int(c) * dvars[k]
            return t

        cons = []
        for k in range(nd):
            aff = bs.get_div(k)
            den_v = aff.get_denominator_val()
            if den_v.is_nan():
                continue  # an existential without explicit definition: a free integer
            den = int(_frac(den_v))
            num = term(lambda t, i: _frac(aff.get_coefficient_val(t, i)), _DT.in_,
                       _frac(aff.get_constant_val()), den)
            cons.append(den * dvars[k] <= num)
            cons.append(num < den * dvars[k] + den)
        for c in bs.get_constraints():
            t = term(lambda tp, i: _frac(c.get_coefficient_val(tp, i)), _DT.set,
                     _frac(c.get_constant_val()), 1)
            cons.append(t == 0 if c.is_equality() else t >= 0)
        disj.append(z3.And(*cons) if cons else z3.BoolVal(True))
    f = z3.Or(*disj) if disj else z3.BoolVal(False)
    return f, names


def z3_check(formula, timeout_ms: int) -> tuple[str, dict]:
    """('unsat' | 'sat' | 'unknown', statistics) for a formula, with a timeout."""
    s = z3.Solver()
    s.set("timeout", max(1, int(timeout_ms)))
    s.add(formula)
    r = s.check()
    stats = {}
    try:
        st = s.statistics()
        for k in st.keys():
            stats[k] = st.get_key_value(k)
    except z3.Z3Exception:
        pass
    return str(r), stats


def to_smtlib(formula) -> str:
    s = z3.Solver()
    s.add(formula)
    return s.to_smt2()


def recheck_smtlib(text: str, timeout_ms: int) -> str:
    """Re-run an SMT-LIB2 obligation in a fresh solver: 'unsat' | 'sat' | 'unknown'."""
    s = z3.Solver()
    s.set("timeout", max(1, int(timeout_ms)))
    s.from_string(text)
    return str(s.check())
