"""Certificate tampering, shared by the recheck and the codegen-gate tests.

Each entry of ``TAMPERS`` turns a valid certificate (its JSON object, or its bytes) into a
forged or malformed one, with the words a rejection must contain. ``forge(src, dst, name)``
writes the tampered file.
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


#: name -> (tamper on the JSON object, words the rejection contains)
TAMPERS = {
    "forged_empty": (forged_empty, "is missing from the certificate"),
    "changed_verdict": (changed_verdict, "verdict: 'refuted'"),
    "changed_solver_verdict": (changed_solver_verdict, "records cvc5 = 'sat'"),
    "deleted_obligation": (deleted_obligation, "is missing from the certificate"),
    "extra_obligation": (extra_obligation, "is extra"),
    "emptied_conflict": (emptied_conflict, "conflict set: differs"),
    "dropped_ordering": (dropped_ordering, "0 ordered set(s), the program subtracts"),
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
}

#: name -> (bytes written instead of the certificate, words the rejection contains)
RAW = {
    "truncated": (lambda raw: raw[:len(raw) // 2], "not valid JSON (truncated?)"),
    "empty_file": (lambda raw: b"", "the file is empty"),
    "wrong_json_type": (lambda raw: b"[1, 2, 3]\n", "wrong JSON type: the file holds a list"),
    "json_string": (lambda raw: b'"proven"\n', "wrong JSON type: the file holds a string"),
    "not_utf8": (lambda raw: b"\xff\xfe\x00{", "not UTF-8"),
}


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
