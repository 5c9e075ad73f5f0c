"""The concrete machine's thread collectives agree with the collective analysis' thread
mappings (which the symbolic checker uses) on every access of the shipped programs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from exogpu_verify.loader import module_procs
from exogpu_verify.amir import lower_to_amir
from exogpu_verify.amir.interp import Machine
from exogpu_verify.amir.threads import bits
from exogpu_verify.analysis import analyze
from exogpu_verify.ir.nodes import Procedure

ROOT = Path(__file__).resolve().parents[2]


def _procs():
    out = []
    for folder in ("specs", "examples"):
        for f in sorted((ROOT / folder).glob("*.py")):
            spec = importlib.util.spec_from_file_location(f"agree_{folder}_{f.stem}", f)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sizes = getattr(mod, "VERIFY_SIZES", None)
            for v in module_procs(mod) if sizes else ():
                out.append(pytest.param(v, sizes, id=f"{f.stem}.{v.name}"))
    return out


#: accesses compared per program (a deterministic bound, not a time budget)
LIMIT = 2000


class Enough(Exception):
    """The recorder saw LIMIT accesses."""


class Recorder(Machine):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.seen = []

    def access(self, s):
        if s.path is not None and self.task != -1:
            self.seen.append((s.path, dict(self.env), self.mask))
            if len(self.seen) >= LIMIT:
                raise Enough
        return super().access(s)


@pytest.mark.parametrize("p,sizes", _procs())
def test_machine_threads_match_analysis(p, sizes):
    info = analyze(p)
    if info.diagnostics:
        pytest.skip("rejected by the static analyses")
    if not info.collectives.kernels:
        pytest.skip("no kernel: nothing runs on device threads")
    # a bounded run: the first LIMIT accesses in program order, element by element (batched
    # nests do not call access(); test_batch_agreement.py compares the two machines)
    m = Recorder(lower_to_amir(p), {k: v for k, v in sizes.items() if p.param(k)}, None,
                 batch=False)
    try:
        m.run()
    except Exception:
        pass  # a hazard or the access bound ends the run early; what ran is compared
    assert m.seen
    for path, env, mask in m.seen:
        mapping = info.collectives.mapping(path)
        assert mapping is not None
        assert set(mapping.threads(env)) == set(bits(mask)), (path, env)
