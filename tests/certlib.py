"""Certificate tampering, shared by the recheck and the codegen-gate tests.

Each entry of ``TAMPERS`` turns a valid certificate (its JSON object, or its bytes) into a
forged or malformed one, with the words a rejection must contain. ``forge(src, dst, name)``
writes the tampered file. ``SCHEDULED`` / ``forge_scheduled`` do the same to the
``derivation`` of a scheduled proc's certificate.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path


def _with_ordered(data):
    return next(i for i, o in enumerate(data["obligations"]) if o["ordered"])


def forged_empty(d):
    d["obligations"] = []
    return d


def changed_verdict(d):
    d["verdict"] = "refuted"
    return d


def changed_solver_verdict(d):
    d["obligations"][0]["solvers"]["cvc5"] = "sat"
    return d


def deleted_obligation(d):
    del d["obligations"][_with_ordered(d)]
    return d


def extra_obligation(d):
    d["obligations"].append(copy.deepcopy(d["obligations"][0]))
    return d


def emptied_conflict(d):
    o = d["obligations"][_with_ordered(d)]
    head = o["conflict"].split(":")[0]  # '[N] -> { [a0, b0, e0] '
    o["conflict"] = head + ": 1 = 0 }"
    return d


def dropped_ordering(d):
    d["obligations"][_with_ordered(d)]["ordered"] = []
    return d


def dropped_last_ordering(d):
    """The last ordering of an obligation that needs two or more, dropped by a careful
    forger: the SMT-LIB restated without it. When proving, each recorded ordering covered
    conflicts the earlier ones left, so without the last some conflicts are ordered by
    nothing: the solvers find the replayed obligation satisfiable."""
    from exogpu_verify.symbolic.smtlib import obligation_smtlib

    o = next(o for o in d["obligations"] if len(o["ordered"]) >= 2)
    o["ordered"].pop()
    o["smtlib"] = obligation_smtlib(o["conflict"], [(x["by"], x["set"]) for x in o["ordered"]],
                                    f"{o['kind']}: {o['name']}")
    return d


def satisfiable_formula(d):
    d["obligations"][0]["smtlib"] = ("(set-logic LIA)\n(declare-fun x () Int)\n"
                                     "(assert (> x 0))\n(check-sat)\n")
    return d


def smuggled_command(d):
    d["obligations"][0]["smtlib"] = '(set-logic LIA)\n(echo "unsat")\n(check-sat)\n'
    return d


def stale_hash(d):
    # a consistent forgery for another program: text and hash agree, but not with the proc
    d["program"] = d["program"] + "\n"
    d["program_hash"] = hashlib.sha256(d["program"].encode()).hexdigest()
    return d


def inconsistent_hash(d):
    d["program_hash"] = "0" * 64
    return d


def old_format(d):
    d["format"] = "exogpu-certificate/1"
    return d


def bad_isl_text(d):
    d["obligations"][0]["conflict"] = "[N] -> { [a0 : a0 < N }"
    return d


def missing_key(d):
    del d["obligations"][0]["conflict"]
    return d


def missing_top_key(d):
    del d["program_hash"]
    return d


def null_field(d):
    d["obligations"][_with_ordered(d)]["ordered"] = None
    return d


def null_proc(d):
    d["proc"] = None
    return d


def wrong_field_type(d):
    d["obligations"] = "all discharged"
    return d


def unparsable_smtlib(d):
    d["obligations"][0]["smtlib"] = "(set-logic LIA)\n(assert (and (> x 0)\n(check-sat)\n"
    return d


def invented_derivation(d):
    # a well-formed derivation for a proc written directly: one rename from some p1
    h = d["program_hash"]
    d["derivation"] = {
        "source": {"proc": "p1", "file": "p1.py", "line": 3, "hash": "1" * 64},
        "steps": [{"primitive": "rename", "args": repr(d["proc"]),
                   "checked": "name only; body unchanged", "unsafe": False, "call": None,
                   "result_hash": h}],
        "result_hash": h, "summary": "derived from p1 (p1.py:3) by 1 checked step (0 unsafe)"}
    return d


def missing_derivation(d):
    del d["derivation"]
    return d


def _witnessed(d):
    """The first obligation with a witnessed script whose witnesses bind variables."""
    return next(o for o in d["obligations"] if o.get("smtlib_witnessed") and
                any(c for x in o["ordered"] for c in x["witness"]))


def _restated(o):
    """The witnessed script made again from the (tampered) witnesses, as a careful forger
    would, so that only the witnesses themselves are wrong."""
    from exogpu_verify.symbolic.smtlib import obligation_smtlib

    o["smtlib_witnessed"] = obligation_smtlib(
        o["conflict"], [(x["by"], x["set"]) for x in o["ordered"]], f"{o['kind']}: {o['name']}",
        witnesses=[x["witness"] for x in o["ordered"]])
    return o


def forged_witness(d):
    """Every instance the witnesses name is -1, before any instance: they order nothing,
    so the witnessed script is satisfiable (the obligation itself still holds)."""
    o = _witnessed(d)
    for x in o["ordered"]:
        x["witness"] = [["(-1)"] * len(c) for c in x["witness"]]
    _restated(o)
    return d


def witness_unknown_name(d):
    o = _witnessed(d)
    x = next(x for x in o["ordered"] if any(x["witness"]))
    x["witness"][0][0] = "(zz + 1)"
    return d


def witness_wrong_type(d):
    o = _witnessed(d)
    o["ordered"][0]["witness"] = "x0"
    return d


def witness_wrong_arity(d):
    o = _witnessed(d)
    x = next(x for x in o["ordered"] if any(x["witness"]))
    x["witness"][0].append("0")
    return d


def swapped_witnessed_script(d):
    _witnessed(d)["smtlib_witnessed"] = ("(set-logic LIA)\n(declare-fun x () Int)\n"
                                         "(assert (and (> x 0) (< x 0)))\n(check-sat)\n")
    return d


def witnesses_without_script(d):
    del _witnessed(d)["smtlib_witnessed"]
    return d


#: name -> (tamper on the JSON object, words the rejection contains)
TAMPERS = {
    "forged_witness": (forged_witness, "answers sat on the witnessed script"),
    "witness_unknown_name": (witness_unknown_name, "unknown name(s) zz"),
    "witness_wrong_type": (witness_wrong_type, "witness: a string (expected a list"),
    "witness_wrong_arity": (witness_wrong_arity, "the set binds"),
    "swapped_witnessed_script": (swapped_witnessed_script,
                                 "smtlib_witnessed differs from the witnessed script"),
    "witnesses_without_script": (witnesses_without_script,
                                 "witnesses without smtlib_witnessed"),
    "forged_empty": (forged_empty, "is missing from the certificate"),
    "changed_verdict": (changed_verdict, "verdict: 'refuted'"),
    "changed_solver_verdict": (changed_solver_verdict, "records cvc5 = 'sat'"),
    "deleted_obligation": (deleted_obligation, "is missing from the certificate"),
    "extra_obligation": (extra_obligation, "is extra"),
    "emptied_conflict": (emptied_conflict, "conflict set: differs"),
    "dropped_ordering": (dropped_ordering, "0 ordered set(s), the program subtracts"),
    "dropped_last_ordering": (dropped_last_ordering, "ordered set(s), the program subtracts"),
    "satisfiable_formula": (satisfiable_formula, "finds the certificate's formula satisfiable"),
    "smuggled_command": (smuggled_command, "not allowed"),
    "stale_hash": (stale_hash, "stale certificate"),
    "inconsistent_hash": (inconsistent_hash, "does not hash to program_hash"),
    "old_format": (old_format, "format: 'exogpu-certificate/1'"),
    "bad_isl_text": (bad_isl_text, "bad isl text"),
    "missing_key": (missing_key, "conflict: missing"),
    "missing_top_key": (missing_top_key, "program_hash: missing"),
    "null_field": (null_field, "ordered: null"),
    "null_proc": (null_proc, "proc: null"),
    "wrong_field_type": (wrong_field_type, "obligations: a string (expected a list)"),
    "unparsable_smtlib": (unparsable_smtlib, "unparsable SMT-LIB"),
    "invented_derivation": (invented_derivation, "is written directly (it has no schedule)"),
    "missing_derivation": (missing_derivation, "derivation: missing"),
}

#: name -> (bytes written instead of the certificate, words the rejection contains)
RAW = {
    "truncated": (lambda raw: raw[:len(raw) // 2], "not valid JSON (truncated?)"),
    "empty_file": (lambda raw: b"", "the file is empty"),
    "wrong_json_type": (lambda raw: b"[1, 2, 3]\n", "wrong JSON type: the file holds a list"),
    "json_string": (lambda raw: b'"proven"\n', "wrong JSON type: the file holds a string"),
    "not_utf8": (lambda raw: b"\xff\xfe\x00{", "not UTF-8"),
}


def _consistent(d):
    """Make the summary agree with the (tampered) steps, as a careful forger would."""
    from exogpu_verify.ir.derivation import summary_line

    dv, src = d["derivation"], d["derivation"]["source"]
    dv["summary"] = summary_line(src["proc"], src["file"], src["line"], len(dv["steps"]),
                                 sum(1 for st in dv["steps"] if st["unsafe"]))
    return d


def _steps(d):
    return d["derivation"]["steps"]


def deleted_step(d):
    del _steps(d)[1]
    return _consistent(d)


def flipped_unsafe(d):
    _steps(d)[2]["unsafe"] = True
    return _consistent(d)


def changed_p1_hash(d):
    d["derivation"]["source"]["hash"] = "0" * 64
    return d


def swapped_steps(d):
    s = _steps(d)
    s[0], s[1] = s[1], s[0]
    return d


def changed_step_args(d):
    _steps(d)[0]["args"] = _steps(d)[0]["args"].replace("256", "128")
    return d


def changed_checked(d):
    _steps(d)[0]["checked"] = "proved for all sizes"
    return d


def changed_call(d):
    _steps(d)[0]["call"]["args"][1] = {"lit": 128}
    return d


def changed_p1_file(d):
    d["derivation"]["source"]["file"] = "elsewhere.py"
    return _consistent(d)


def dropped_derivation(d):
    d["derivation"] = None
    return d


def edited_summary(d):
    d["derivation"]["summary"] = d["derivation"]["summary"].replace("(0 unsafe)", "(2 unsafe)")
    return d


def other_result(d):
    d["derivation"]["result_hash"] = _steps(d)[-1]["result_hash"] = "a" * 64
    return d


def bad_unsafe_type(d):
    _steps(d)[2]["unsafe"] = "no"
    return d


def null_steps(d):
    d["derivation"]["steps"] = None
    return d


def empty_steps(d):
    d["derivation"]["steps"] = []
    return d


def step_not_object(d):
    _steps(d)[0] = 5
    return d


def missing_source(d):
    del d["derivation"]["source"]
    return d


def bad_p1_hash(d):
    d["derivation"]["source"]["hash"] = "xyz"
    return d


def derivation_string(d):
    d["derivation"] = "derived from saxpy"
    return d


def call_of_another_primitive(d):
    _steps(d)[0]["call"]["primitive"] = "reorder_loops"
    return d


#: tampers of a scheduled proc's certificate (tests/schedule/progs/saxpy_sched.py's
#: saxpy_kernel: divide_loop, wrap_with_context, set_loop_mode, rename; none unsafe)
SCHEDULED = {
    "deleted_step": (deleted_step, "step 2 of the schedule, wrap_with_context("),
    "flipped_unsafe": (flipped_unsafe, "derivation.steps[2] (step 3, set_loop_mode): unsafe "
                                       "is true in the certificate, false in the schedule"),
    "changed_p1_hash": (changed_p1_hash, "derivation.source.hash: 0000000000000000... is not "
                                         "the program the schedule starts from"),
    "swapped_steps": (swapped_steps, "derivation.steps[0] (step 1, divide_loop): primitive: "
                                     "the certificate records 'wrap_with_context'"),
    "changed_step_args": (changed_step_args, "derivation.steps[0] (step 1, divide_loop): args:"),
    "changed_checked": (changed_checked, "checked: the certificate records 'proved for all "
                                         "sizes'"),
    "changed_call": (changed_call, "call: the recorded call differs from the schedule's"),
    "changed_p1_file": (changed_p1_file, "derivation.source.file: 'elsewhere.py'"),
    "dropped_derivation": (dropped_derivation, "the certificate does not record its schedule"),
    "edited_summary": (edited_summary, "derivation.summary: "),
    "other_result": (other_result, "derivation.result_hash: the recorded schedule ends at "
                                   "another program"),
    "bad_unsafe_type": (bad_unsafe_type, "derivation.steps[2] (set_loop_mode).unsafe: a "
                                         "string (expected a boolean)"),
    "null_steps": (null_steps, "derivation.steps: null (expected a list)"),
    "empty_steps": (empty_steps, "derivation.steps: an empty list"),
    "step_not_object": (step_not_object, "derivation.steps[0]: a number (expected an object)"),
    "missing_source": (missing_source, "derivation.source: missing (expected an object)"),
    "bad_p1_hash": (bad_p1_hash, "derivation.source.hash: 'xyz'... is not a SHA-256"),
    "derivation_string": (derivation_string, "derivation: a string (expected an object or "
                                             "null)"),
    "call_of_another_primitive": (call_of_another_primitive,
                                  "derivation.steps[0] (divide_loop).call: calls "
                                  "'reorder_loops', the step is 'divide_loop'"),
}


def forge_scheduled(src: Path, dst: Path, name: str) -> str:
    """``forge`` with a tamper of ``SCHEDULED``."""
    fn, words = SCHEDULED[name]
    Path(dst).write_text(json.dumps(fn(json.loads(Path(src).read_text())), indent=1))
    return words


def forge(src: Path, dst: Path, name: str) -> str:
    """Write the tampered certificate ``name`` of ``src`` to ``dst``; returns the words its
    rejection must contain."""
    raw = Path(src).read_bytes()
    if name in RAW:
        fn, words = RAW[name]
        Path(dst).write_bytes(fn(raw))
        return words
    fn, words = TAMPERS[name]
    data = fn(json.loads(raw))
    Path(dst).write_text(json.dumps(data, indent=1))
    return words


ALL = sorted(TAMPERS) + sorted(RAW)
