"""Re-checking a certificate: its claims against what the program itself gives.

``recheck_certificate(path, p)`` trusts nothing in the file. In order:

1. the file must be a well-formed certificate (``schema_problems``: JSON object, every key
   present with the right type, the current format, verdict ``proven``, every obligation
   with its isl texts, SMT-LIB and ``unsat`` verdicts);
2. it must name ``p`` and carry ``p``'s program hash (else it is stale: the program changed);
3. its ``derivation`` must be ``p``'s own chain of rewrites (the same p1, by hash, and the
   same steps in order), and the recorded steps, replayed on p1, must give the recorded
   programs (``schedule.provenance.recheck_provenance``); null exactly when ``p`` is not
   scheduled;
4. the obligations are re-derived from ``p`` by the same pipeline that wrote them (static
   analyses, then the symbolic checker: every conflict set and every candidate ordering is
   built from the program again), and the two lists must agree: same kinds, conflict texts
   and ordered texts, none missing and none extra, and the same SMT-LIB script (comments
   aside). Of the candidate orderings of an access pair, those the certificate recorded are
   taken (``symbolic.check.replaying``) instead of isl choosing them again, and Z3 and cvc5,
   afresh, must both find every whole obligation ``unsat``: the certificate can only pick
   among orderings the program guarantees, and a pick that does not cover the conflicts
   is no proof.

Every difference is reported with the obligation (or derivation field) and what differs.
``exogpu-verify --recheck`` finds ``p`` by re-loading the source the certificate names
(which re-runs its schedule, every rewrite re-checking its legality); the codegen gate
passes the proc it is about to compile.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .symbolic.certificates import (FORMAT, PROOF_SOLVERS, obligation_record, program_hash,
                                    program_text)

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass
class RecheckResult:
    path: Path
    ok: bool
    problems: list = field(default_factory=list)
    obligations: int = 0
    proc: str | None = None
    seconds: float = 0.0
    #: the certificate's "derived from p1 (file:line) by k checked steps (j unsafe)"
    derivation: str | None = None


# ------------------------------------------------------------------------ reading


def read_certificate(path) -> tuple[dict | None, list[str]]:
    """(data, problems): the JSON object of a certificate file and what is malformed."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        return None, [f"cannot read the file: {e.strerror or e}"]
    if not raw.strip():
        return None, ["the file is empty (a certificate is a JSON object)"]
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, ["the file is not UTF-8 text (a certificate is a JSON object)"]
    except json.JSONDecodeError as e:
        return None, [f"not valid JSON (truncated?): {e.msg} at line {e.lineno}, column "
                      f"{e.colno}"]
    except RecursionError:  # Python's parser gives up on deep nesting: no certificate is
        return None, ["not a certificate: its JSON nests lists or objects too deeply to parse "
                      "(a certificate is an object a few levels deep)"]
    if not isinstance(data, dict):
        return None, [f"wrong JSON type: the file holds {_jtype(data)}, a certificate is a "
                      "JSON object"]
    return data, schema_problems(data)


def _jtype(v) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


_WANT = {str: "a string", list: "a list", dict: "an object", bool: "a boolean",
         int: "a number"}


def _field(obj: dict, key: str, typ, where: str, problems: list,
           nullable: bool = False) -> object:
    """``obj[key]`` when it has type ``typ`` (or is null and ``nullable``), else None with
    the problem (``where`` + ``key``: the field's path) appended."""
    want = _WANT[typ] + (" or null" if nullable else "")
    if key not in obj:
        problems.append(f"{where}{key}: missing (expected {want})")
        return None
    v = obj[key]
    if v is None:
        if not nullable:
            problems.append(f"{where}{key}: null (expected {want})")
        return None
    if not isinstance(v, typ) or (isinstance(v, bool) and typ is not bool):
        problems.append(f"{where}{key}: {_jtype(v)} (expected {want})")
        return None
    return v


def schema_problems(data: dict) -> list[str]:
    """What is malformed in a certificate object (field paths in each message)."""
    pr: list[str] = []
    fmt = _field(data, "format", str, "", pr)
    if fmt is not None and fmt != FORMAT:
        pr.append(f"format: {fmt!r}, expected {FORMAT!r} (re-run exogpu-verify "
                  "--certificates DIR to write a current certificate)")
        return pr  # another format: its other fields mean other things
    _field(data, "proc", str, "", pr)
    _field(data, "source", str, "", pr)
    _field(data, "tools", dict, "", pr)
    h = _field(data, "program_hash", str, "", pr)
    if h is not None and not _HEX64.match(h):
        pr.append(f"program_hash: {h[:20]!r}... is not a SHA-256 (64 hex digits)")
    prog = _field(data, "program", str, "", pr)
    if prog is not None and h is not None and \
            hashlib.sha256(prog.encode()).hexdigest() != h:
        pr.append("program: the program text does not hash to program_hash")
    v = _field(data, "verdict", str, "", pr)
    if v is not None and v != "proven":
        pr.append(f"verdict: {v!r}; a certificate records a proof, its verdict is 'proven'")
    _derivation_problems(data, h, pr)
    obs = _field(data, "obligations", list, "", pr)
    for i, ob in enumerate(obs or []):
        where = f"obligations[{i}]"
        if not isinstance(ob, dict):
            pr.append(f"{where}: {_jtype(ob)} (expected an object)")
            continue
        name = ob.get("name")
        if isinstance(name, str):
            where += f" ({_short(name)})"
        where += "."
        _field(ob, "name", str, where, pr)
        _field(ob, "kind", str, where, pr)
        _field(ob, "conflict", str, where, pr)
        _field(ob, "smtlib", str, where, pr)
        ordered = _field(ob, "ordered", list, where, pr)
        for j, o in enumerate(ordered or []):
            w2 = f"{where}ordered[{j}]"
            if not isinstance(o, dict):
                pr.append(f"{w2}: {_jtype(o)} (expected an object with 'by' and 'set')")
                continue
            _field(o, "by", str, w2 + ".", pr)
            _field(o, "set", str, w2 + ".", pr)
            if "witness" in o:
                _witness_shape(o["witness"], w2 + ".witness", pr)
        if "smtlib_witnessed" in ob:
            _field(ob, "smtlib_witnessed", str, where, pr)
            if isinstance(ordered, list) and not all(
                    isinstance(o, dict) and "witness" in o for o in ordered):
                pr.append(f"{where}smtlib_witnessed: present, but not every ordered set has "
                          "a witness (the witnessed script replaces every set's instances)")
        elif isinstance(ordered, list) and any(isinstance(o, dict) and "witness" in o
                                               for o in ordered):
            pr.append(f"{where}ordered: witnesses without smtlib_witnessed (the script they "
                      "give)")
        if "strategy" in ob:  # optional: how a solver decided it (a hint, not evidence)
            st = _field(ob, "strategy", dict, where, pr)
            for k, v in (st or {}).items():
                if not isinstance(v, str):
                    pr.append(f"{where}strategy.{k}: {_jtype(v)} (expected a string)")
        sv = _field(ob, "solvers", dict, where, pr)
        if sv is not None:
            for s in ("isl",) + PROOF_SOLVERS:
                want = "empty" if s == "isl" else "unsat"
                got = sv.get(s)
                if got is None:
                    pr.append(f"{where}solvers: no {s} verdict (a proof needs isl, "
                              f"{' and '.join(PROOF_SOLVERS)})")
                elif not (isinstance(got, str) and got.startswith(want)):
                    pr.append(f"{where}solvers: records {s} = {got!r}, a proof needs {want!r}")
    return pr


def _witness_shape(w, where: str, pr: list) -> None:
    """A witness is a list of candidates, each a list of term texts (``witness.py``)."""
    if not isinstance(w, list):
        pr.append(f"{where}: {_jtype(w)} (expected a list of candidates, each a list of "
                  "term texts)")
        return
    for k, cand in enumerate(w):
        if not isinstance(cand, list):
            pr.append(f"{where}[{k}]: {_jtype(cand)} (expected a list of term texts)")
            continue
        for m, t in enumerate(cand):
            if not isinstance(t, str):
                pr.append(f"{where}[{k}][{m}]: {_jtype(t)} (expected a term's text)")


def _derivation_problems(data: dict, program_h: str | None, pr: list) -> None:
    """The ``derivation`` field: null (a proc written directly) or the record of its
    schedule (``ir.derivation.provenance_record``), internally consistent: the steps end at
    ``result_hash``, which is the certificate's program."""
    if "derivation" not in data:
        pr.append("derivation: missing (expected an object or null: null for a proc written "
                  "directly)")
        return
    d = data["derivation"]
    if d is None:
        return
    if not isinstance(d, dict):
        pr.append(f"derivation: {_jtype(d)} (expected an object or null)")
        return
    n0 = len(pr)
    src = _field(d, "source", dict, "derivation.", pr)
    if src is not None:
        _field(src, "proc", str, "derivation.source.", pr)
        _field(src, "file", str, "derivation.source.", pr, nullable=True)
        _field(src, "line", int, "derivation.source.", pr, nullable=True)
        _hash_field(src, "hash", "derivation.source.", pr)
    steps = _field(d, "steps", list, "derivation.", pr)
    if steps is not None and not steps:
        pr.append("derivation.steps: an empty list (a scheduled proc has at least one step; "
                  "a proc written directly has derivation null)")
    for i, st in enumerate(steps or []):
        where = f"derivation.steps[{i}]"
        if not isinstance(st, dict):
            pr.append(f"{where}: {_jtype(st)} (expected an object)")
            continue
        prim = st.get("primitive")
        where += f" ({prim})." if isinstance(prim, str) else "."
        _field(st, "primitive", str, where, pr)
        _field(st, "args", str, where, pr)
        _field(st, "checked", str, where, pr)
        _field(st, "unsafe", bool, where, pr)
        call = _field(st, "call", dict, where, pr, nullable=True)
        if call is not None and isinstance(prim, str) and call.get("primitive") != prim:
            pr.append(f"{where}call: calls {call.get('primitive')!r}, the step is {prim!r}")
        _hash_field(st, "result_hash", where, pr, nullable=True)
    end = _hash_field(d, "result_hash", "derivation.", pr)
    _field(d, "summary", str, "derivation.", pr)
    if len(pr) > n0:
        return
    if program_h is not None and end != program_h:
        pr.append("derivation.result_hash: the recorded schedule ends at another program than "
                  "this certificate's (program_hash)")
    last = steps[-1]["result_hash"]
    if last is not None and last != end:
        pr.append(f"derivation.steps[{len(steps) - 1}].result_hash: the last step does not "
                  "give the program the derivation ends at (derivation.result_hash)")


def _hash_field(obj: dict, key: str, where: str, pr: list, nullable: bool = False):
    h = _field(obj, key, str, where, pr, nullable)
    if h is not None and not _HEX64.match(h):
        pr.append(f"{where}{key}: {h[:20]!r}... is not a SHA-256 (64 hex digits)")
        return None
    return h


def _short(s: str, n: int = 70) -> str:
    s = " ".join(str(s).split())
    return repr(s if len(s) <= n else s[:n - 3] + "...")


# ------------------------------------------------------------------------ comparing


def _first_diff(a: str, b: str, ctx: int = 30) -> str:
    k = 0
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            break
    else:
        k = min(len(a), len(b))
    lo, n = max(0, k - ctx), 2 * ctx + 10
    return (f"first difference at character {k}: certificate {_short(a[lo:k + ctx], n)} "
            f"vs program {_short(b[lo:k + ctx], n)}")


def _line_diff(old: str, new: str) -> str:
    a, b = old.splitlines(), new.splitlines()
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first changed line {k + 1}: certificate {_short(x.strip())} vs now " \
                   f"{_short(y.strip())}"
    if len(a) != len(b):
        return f"the program has {len(b)} lines, the certificate's {len(a)}"
    return "the texts differ"


def _key(o: dict) -> tuple:
    return (o.get("kind"), o.get("conflict"), tuple(x.get("set") for x in o.get("ordered")))


def _altered(i: int, c: dict, d: dict) -> str:
    what = []
    if c["kind"] != d["kind"]:
        what.append(f"kind {c['kind']!r}, the program gives {d['kind']!r}")
    if c["conflict"] != d["conflict"]:
        what.append("conflict set: " + _isl_problem(c["conflict"],
                                                     _first_diff(c["conflict"], d["conflict"])))
    co, do = c["ordered"], d["ordered"]
    if len(co) != len(do):
        what.append(f"{len(co)} ordered set(s), the program subtracts {len(do)}")
    for j, (x, y) in enumerate(zip(co, do)):
        if x["set"] != y["set"]:
            what.append(f"ordered[{j}] ({_short(y['by'], 50)}): " +
                        _isl_problem(x["set"], _first_diff(x["set"], y["set"])))
            break
    return (f"obligations[{i}] ({_short(c['name'])}) is altered: " + "; ".join(what))


def _isl_problem(text: str, otherwise: str) -> str:
    from .symbolic.isltext import ParseError, parse_set

    try:
        parse_set(text)
    except ParseError as e:
        return f"bad isl text ({e})"
    return f"differs from the one re-derived from the program ({otherwise})"


def _smt_problem(i: int, c: dict, derived_text: str) -> str | None:
    from .symbolic.solvers import ScriptError, check_script, normalized, run_z3

    if c["smtlib"] == derived_text or normalized(c["smtlib"]) == normalized(derived_text):
        return None
    msg = (f"obligations[{i}] ({_short(c['name'])}).smtlib differs from the SMT-LIB script "
           "of the re-derived obligation")
    try:
        check_script(c["smtlib"])
    except ScriptError as e:
        return f"{msg}: unparsable SMT-LIB ({e})"
    a = run_z3(c["smtlib"], 5000)
    if a.result == "sat":
        msg += "; Z3 finds the certificate's formula satisfiable (it proves nothing)"
    elif a.result == "unknown" and a.reason.startswith("Z3 rejected"):
        msg += f": unparsable SMT-LIB ({a.reason})"
    return msg


def compare_obligations(cert_obs: list, derived: list) -> list[str]:
    """Problems between the certificate's obligation records and the re-derived ones.
    Obligations are matched by kind and isl texts (names carry source lines, which may move
    without changing the program); unmatched ones are paired by name to say what changed."""
    problems = []
    pool = defaultdict(list)
    for j, d in enumerate(derived):
        pool[_key(d)].append(j)
    pairs, lone_c = [], []
    for i, c in enumerate(cert_obs):
        js = pool.get(_key(c))
        if js:
            pairs.append((i, js.pop(0)))
        else:
            lone_c.append(i)
    used = {j for _, j in pairs}
    lone_d = [j for j in range(len(derived)) if j not in used]
    for i in lone_c:
        c = cert_obs[i]
        cand = [j for j in lone_d if derived[j]["name"] == c["name"]]
        if cand:
            lone_d.remove(cand[0])
            problems.append(_altered(i, c, derived[cand[0]]))
        else:
            problems.append(f"obligations[{i}] ({_short(c['name'])}) is extra: the program "
                            "gives no such obligation" +
                            _bad_text_note(c))
    for j in lone_d:
        d = derived[j]
        problems.append(f"obligation {_short(d['name'])} (kind {d['kind']}) is missing from "
                        "the certificate")
    for i, j in pairs:
        p = _smt_problem(i, cert_obs[i], derived[j]["smtlib"])
        if p:
            problems.append(p)
        p = _witness_problem(i, cert_obs[i], derived[j])
        if p:
            problems.append(p)
    return problems


def _witness_problem(i: int, c: dict, d: dict) -> str | None:
    """The certificate's witnessed script against the re-derived one (made from the
    certificate's witnesses and the program's sets). None when it has none: the quantified
    script was decided instead."""
    from .symbolic.solvers import normalized

    if "smtlib_witnessed" not in c:
        return None
    where = f"obligations[{i}] ({_short(c['name'])})"
    if "smtlib_witnessed" not in d:
        why = d.get("_witness_rejected") or "no witnessed script was derived"
        return f"{where}: its witnesses prove nothing: {why}"
    if c["smtlib_witnessed"] != d["smtlib_witnessed"] and \
            normalized(c["smtlib_witnessed"]) != normalized(d["smtlib_witnessed"]):
        return (f"{where}.smtlib_witnessed differs from the witnessed script made from the "
                "program's sets and the certificate's witnesses")
    return None


def _bad_text_note(c: dict) -> str:
    from .symbolic.isltext import ParseError, parse_set

    for where, text in [("conflict", c["conflict"])] + \
            [(f"ordered[{k}].set", o["set"]) for k, o in enumerate(c["ordered"])]:
        try:
            parse_set(text)
        except ParseError as e:
            return f" ({where}: bad isl text: {e})"
    return ""


# ------------------------------------------------------------------------ the check

#: successful derivations, per proc (a Procedure compares by value: same IR, same source
#: location). Deriving is a pure function of the program, so a process that checks several
#: certificates of one proc (the gate called again, a test suite) derives it once.
_DERIVED: dict = {}


def recheck_certificate(path, p, timeout_s: float = 60.0, cache: bool = True
                        ) -> RecheckResult:
    """Check the certificate at ``path`` against the proc ``p`` it must prove (see the
    module docstring). ``p`` None: only the file itself is checked (and that fails, since
    nothing can be re-derived). ``cache``: reuse this process's earlier derivation of ``p``."""
    t0 = time.perf_counter()
    path = Path(path)
    data, problems = read_certificate(path)
    res = RecheckResult(path, False, problems,
                        proc=data.get("proc") if isinstance(data, dict) else None)
    if data is None or problems:
        return _done(res, t0)
    res.obligations = len(data["obligations"])
    if p is None:
        res.problems.append("no program to re-derive the obligations from")
        return _done(res, t0)
    if data["proc"] != p.name:
        res.problems.append(f"proc: the certificate is for {data['proc']!r}, not {p.name!r}")
        return _done(res, t0)
    if data["program_hash"] != program_hash(p):
        res.problems.append(
            f"stale certificate: {p.name} changed since it was proven (program hash differs; "
            f"{_line_diff(data['program'], program_text(p))}); re-run exogpu-verify "
            "--certificates DIR on its source")
        return _done(res, t0)
    res.derivation = (data["derivation"] or {}).get("summary")
    res.problems += derivation_problems(p, data["derivation"])
    key = (p, tuple(_key(o) for o in data["obligations"]),
           json.dumps([[x.get("witness") for x in o["ordered"]] for o in data["obligations"]]))
    derived = _DERIVED.get(key) if cache else None
    if derived is None:
        derived, why = derive_obligations(p, timeout_s, data["obligations"])
        if derived is None:
            # the certificate's orderings prove nothing: derive as when proving, so that the
            # comparison says which obligation differs (or that the program is not proven)
            derived, why = derive_obligations(p, timeout_s)
        if derived is None:
            res.problems.append(f"the program is not proven by this exogpu ({why}): the "
                                "certificate's verdict 'proven' no longer holds")
            return _done(res, t0)
        _DERIVED[key] = derived
    res.problems += compare_obligations(data["obligations"], derived)
    return _done(res, t0)


def derivation_problems(p, recorded: dict | None) -> list[str]:
    """The certificate's ``derivation`` against ``p``'s own chain, and the recorded steps
    replayed on p1 (``schedule.provenance.recheck_provenance``)."""
    if recorded is None and not p.provenance:
        return []
    from .ir.derivation import summary_line
    from .schedule.provenance import recheck_provenance

    problems = recheck_provenance(p, recorded)
    if recorded is not None:
        src, steps = recorded["source"], recorded["steps"]
        want = summary_line(src["proc"], src["file"], src["line"], len(steps),
                            sum(1 for st in steps if st["unsafe"]))
        if recorded["summary"] != want:
            problems.append(f"derivation.summary: {_short(recorded['summary'], 120)}, but the "
                            f"recorded fields say {_short(want, 120)}")
    return problems


def derive_obligations(p, timeout_s: float = 60.0, replay: list | None = None):
    """(obligation records, None) for a proven proc, else (None, why): the same pipeline
    that writes certificates (``verify`` in symbolic mode: static analyses, isl, Z3, cvc5).
    ``replay``: a certificate's obligation records, whose orderings are taken where the
    program gives them (``symbolic.check.replaying``: the solvers decide, isl subtracts
    nothing), and whose recorded cvc5 strategy is tried first (``solvers.preferring``);
    without it, isl chooses them as when proving."""
    from .api import verify
    from .symbolic.check import replaying
    from .symbolic.solvers import preferring

    first = {o.get(k): o["strategy"]["cvc5"] for o in replay or ()
             for k in ("smtlib", "smtlib_witnessed") if isinstance(o.get(k), str)
             and isinstance(o.get("strategy"), dict)
             and isinstance(o["strategy"].get("cvc5"), str)}
    with replaying(replay) if replay is not None else contextlib.nullcontext(), \
            preferring(first):
        r = verify(p, mode="symbolic", timeout_s=timeout_s)
    if r.verdict != "proven" or "obligations" not in r.extra:
        why = f"verdict {r.verdict}" + (f": {r.reason}" if r.reason else "")
        return None, why
    try:
        recs = [obligation_record(ob) for ob in r.extra["obligations"]]
    except ValueError as e:
        return None, str(e)
    for ob, rec in zip(r.extra["obligations"], recs):
        if ob.extra.get("witness_rejected"):  # for the comparison's message only
            rec["_witness_rejected"] = ob.extra["witness_rejected"]
    return recs, None


def _done(res: RecheckResult, t0: float) -> RecheckResult:
    res.ok = not res.problems
    res.seconds = time.perf_counter() - t0
    return res
