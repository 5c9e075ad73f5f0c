"""The GPU run script (``bench/gpu_run.py``) without a GPU.

Default run: the parent's survival of a hung, a crashed and a failing child; sizes derived
from the asserts meeting the sanitizer's requirements; the correctness harness on hand-made
cases with right and wrong "kernels" (norm-wise and element-wise); tolerances; chunked
references; the CuPy backend's array code on numpy; bf16 rounding; the runner importing
without the checker; ``--ingest`` (and its refusal of a dry run). Slow: the dry run end to
end (it builds every kernel with nvcc; it fails instead of skipping in CI when nvcc is
missing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import gpu_device as D  # noqa: E402
import gpu_dry  # noqa: E402
import gpu_report as R  # noqa: E402
import gpu_run  # noqa: E402


# ---------------------------------------------------------------- the parent
FAKE_CHILD = r"""
import json, os, sys, time
items = sys.argv[1].split(",")
if items[0] == "boom":
    sys.exit(5)                      # fails before running anything
for item in items:
    print("@@START " + json.dumps(item), flush=True)
    if item == "hang":
        time.sleep(600)
    if item == "crash":
        print("a dying message", flush=True)
        os._exit(3)
    if item == "raise":              # reports, then exits: the context is not trusted
        print("@@RESULT " + json.dumps({"item": item, "ok": False, "error": "E"}), flush=True)
        sys.exit(3)
    print("@@RESULT " + json.dumps({"item": item, "ok": True}), flush=True)
"""


def _run(items, item_timeout=3, budget=120):
    return gpu_run.run_items(lambda todo: [sys.executable, "-c", FAKE_CHILD, ",".join(todo)],
                             items, item_timeout=item_timeout, deadline=time.time() + budget,
                             log=lambda m, echo=True: None)


def test_parent_survives_a_hung_a_crashed_and_a_failing_item():
    res = _run(["a", "hang", "b", "crash", "c", "raise", "d"])  # "hang" stopped by its timeout
    assert [res[i]["ok"] for i in "abcd"] == [True] * 4
    assert not res["hang"]["ok"] and res["hang"]["error"].startswith("timeout")
    assert not res["crash"]["ok"] and "exit 3" in res["crash"]["error"]
    assert "a dying message" in res["crash"]["log"]
    assert res["raise"] == {"item": "raise", "ok": False, "error": "E"}


def test_a_child_failing_at_start_costs_one_item_each_time_and_ends():
    res = _run(["boom", "boom2"])
    assert not res["boom"]["ok"] and "before running it" in res["boom"]["error"]
    assert res["boom2"]["ok"]          # the next child got the rest


def test_parent_stops_at_the_budget():
    res = _run(["hang", "a"], item_timeout=60, budget=3)
    assert "budget" in res["hang"]["error"] and res["a"].get("skipped") == "device-time budget"


# ---------------------------------------------------------------- sizes
def spec_variant_names() -> set[str]:
    """Every variant of specs/gemm.py and specs/gemv.py, the unproven ones too."""
    from exogpu_verify.loader import load_module
    names = set()
    for f in ("gemm", "gemv"):
        mod, diag = load_module(ROOT / "specs" / f"{f}.py")
        assert mod is not None, diag
        names |= {p.name for p in mod.VARIANTS.values()}
        names |= {p.name for p in getattr(mod, "UNPROVEN", {}).values()}
    assert len(names) == 13
    return names


@pytest.fixture(scope="module")
def plan_cases():
    import gpu_plan as P
    return P, P.discover(with_examples=False, with_backend=True)


def test_sizes_follow_the_asserts_and_the_sanitizer_rules(plan_cases):
    P, cases = plan_cases
    assert {c.name for c in cases} >= spec_variant_names()
    assert {c.recipe.op for c in cases} >= {"gemm_abt", "gemv", "copy", "saxpy", "transpose"}
    for c in cases:
        s = P.case_sizes(c)
        mod = P.moduli(c.proc)
        keys = set(mod)
        smallest = min(s["correct"], key=lambda z: sum(v for k, v in z.items() if k in keys))
        assert {k: smallest[k] for k in keys} == mod, c.name   # the smallest allowed
        for z in s["correct"] + s["time"] + [s["sanitize"]]:
            assert P.allowed(c.proc, {k: z[k] for k in keys}) is None, (c.name, z)
        f = s["sanitize_facts"]
        assert f["tasks"] >= 2 * f["ctas"] or f["tasks"] == 1, (c.name, f)
        assert f["ring_wraps"] is None or f["ring_wraps"] >= 2, (c.name, f)
        if c.recipe.largest and c.recipe.op in ("gemm_abt", "gemv"):
            big = [z for z in s["correct"] if "largest" in z]
            assert len(big) == 2, c.name
            assert any(k in z and z[k] != mod[k] for z in s["correct"] for k in keys)
    gemm = next(c for c in cases if c.name == "gemm_bf16_f32_128x256_s4_coop_g2")
    assert P.moduli(gemm.proc) == {"M": 128, "N": 512, "K": 64}
    kn = next(c for c in cases if c.name.endswith("_kn"))  # B is K x N: C = A @ B
    assert kn.recipe.op == "matmul" and kn.recipe.timed and kn.recipe.tensor_cores
    s = P.case_sizes(gemm)["sanitize_facts"]
    assert s["ring_wraps"] >= 2 and s["tasks"] >= 2 * s["ctas"]


def test_a_sanitizer_size_that_misses_its_purpose_is_refused(plan_cases):
    P, cases = plan_cases
    gemm = next(c for c in cases if c.name == "gemm_bf16_f32_128x256_s4_coop_g2")
    p = gemm.proc
    one_wrap = {"M": 256, "N": 1024, "K": 128}      # 2 k-steps on a 4-deep ring
    assert P.ring_wraps(p, one_wrap) < 2 and P.task_count(p, one_wrap) == 4


def test_a_missing_recipe_is_a_clear_error():
    import gpu_plan as P
    with pytest.raises(LookupError, match="add one to RECIPES"):
        P.recipe_for("specs/new_kernel.py", "new_kernel")


def test_inconclusive_gates_are_retried_then_built_unchecked(monkeypatch, tmp_path):
    """A solver's unknown is retried alone after the builds; still unknown, the kernel is
    built unchecked and labelled; a certificate that does not match fails at once."""
    import gpu_plan as P
    tries: dict = {}

    def gate(c):
        tries[c.name] = tries.get(c.name, 0) + 1
        if c.name == "never" or (c.name == "late" and tries[c.name] < 3):
            raise RuntimeError(f"{c.name} is rejected: the program is not proven by this "
                               "exogpu (verdict unknown: cvc5 could not decide ...)")
        if c.name == "stale":
            raise RuntimeError("stale certificate: the program hash differs")
        return "ok"

    def build(c, bundle=None, gate_done=False):
        return {"name": c.name, "gate": c.gate, "resources": [], "build_seconds": 0,
                "cached": True, "health": {"ok": True, "issues": []}, "kernel": None}
    monkeypatch.setattr(P, "gate_check", gate)
    monkeypatch.setattr(P, "build_case", build)
    cases = [P.Case(n, "specs/x.py", None, P.GEMM, "certificate", "specs", "proofs")
             for n in ("never", "late", "stale", "fine")]
    logs: list = []
    m = P.build_bundle(tmp_path / "bundle", cases, jobs=1, log=logs.append)
    gates = {e["name"]: e["gate"] for e in m["cases"]}
    assert [e["name"] for e in m["cases"]] == ["never", "late", "fine"]
    assert gates["late"] == gates["fine"] == "certificate"
    assert gates["never"].startswith("unchecked: the proof gate's re-check was inconclusive")
    assert tries == {"never": 1 + P.GATE_RETRIES, "late": 3, "stale": 1, "fine": 1}
    assert [f["name"] for f in m["build_failures"]] == ["stale"]
    assert any("WARNING never" in x for x in logs)
    assert json.loads((tmp_path / "bundle" / "manifest.json").read_text())["cases"]


# ---------------------------------------------------------------- the correctness harness
COPY = {"name": "copy", "op": "copy", "moduli": {"N": 4}, "outputs": ["B"], "inout": [],
        "scalars": {}, "arrays": {"A": {"dtype": "f32", "shape": ["N"]},
                                  "B": {"dtype": "f32", "shape": ["N"]}}}
GEMM = {"name": "g", "op": "gemm_abt", "moduli": {"M": 1, "N": 1, "K": 1}, "outputs": ["C"],
        "inout": [], "scalars": {}, "reduction": "K", "tensor_cores": True,
        "arrays": {"A": {"dtype": "bf16", "shape": ["M", "K"]},
                   "B": {"dtype": "bf16", "shape": ["N", "K"]},
                   "C": {"dtype": "f32", "shape": ["M", "N"]}}}
SAXPY = {"name": "s", "op": "saxpy", "moduli": {"N": 1}, "outputs": [], "inout": ["y"],
         "scalars": {"a": 1.5}, "arrays": {"x": {"dtype": "f32", "shape": ["N"]},
                                           "y": {"dtype": "f32", "shape": ["N"]}}}


def _bf(x):
    import ml_dtypes
    return x.view(ml_dtypes.bfloat16).astype(np.float32) if x.dtype == np.uint16 else \
        x.astype(np.float32)


def _gemm(args, grid):
    args["C"][...] = _bf(args["A"]) @ _bf(args["B"]).T


def test_check_accepts_a_right_kernel_and_rejects_wrong_ones():
    B = D.HostArrays(interpret=True)

    def copy(args, grid):
        args["B"][...] = args["A"]
    assert D.check(COPY, {"N": 64}, B, copy)["ok"]

    def partial(args, grid):          # one element never written: stays NaN
        args["B"][:-1] = args["A"][:-1]
    r = D.check(COPY, {"N": 64}, B, partial)
    assert not r["ok"] and r["outputs"]["B"]["nonfinite"] == 1

    def zeros(args, grid):
        args["B"][...] = 0
    assert not D.check(COPY, {"N": 64}, B, zeros)["ok"]
    r = D.check(GEMM, {"M": 96, "N": 80, "K": 72}, B, _gemm)
    assert r["ok"] and r["outputs"]["C"]["rel_error"] < 1e-6

    def transposed(args, grid):      # C = A @ B instead of A @ B.T on a square problem
        args["C"][...] = _bf(args["A"]) @ _bf(args["B"])
    assert not D.check(GEMM, {"M": 64, "N": 64, "K": 64}, B, transposed)["ok"]

    def saxpy(args, grid):
        args["y"][...] = np.float32(args["a"]) * args["x"] + args["y"]
    assert D.check(SAXPY, {"N": 1000}, B, saxpy)["ok"]

    def stale(args, grid):           # one element of the in-out array left as it was
        y0 = args["y"].copy()
        saxpy(args, grid)
        args["y"][7] = y0[7]
    r = D.check(SAXPY, {"N": 1000}, B, stale)
    assert not r["ok"] and r["outputs"]["y"]["nonfinite"] == 0


def test_one_wrong_element_in_a_large_output_fails_element_wise():
    """One element off by one rms in a bf16 output of half a million elements moves the
    norm-wise error far less than its tolerance (bf16 rounding); the element-wise bound
    catches it."""
    B = D.HostArrays(interpret=True)
    case = dict(GEMM, arrays=dict(GEMM["arrays"], C={"dtype": "bf16", "shape": ["M", "N"]}))

    def right(args, grid):
        _gemm(args, grid)

    def one_off(args, grid):
        _gemm(args, grid)
        c = args["C"].astype(np.float32)
        args["C"][123, 45] = c[123, 45] + float(np.sqrt(np.mean(c * c)))
    assert D.check(case, {"M": 1024, "N": 512, "K": 16}, B, right)["ok"]
    r = D.check(case, {"M": 1024, "N": 512, "K": 16}, B, one_off)
    o = r["outputs"]["C"]
    assert not r["ok"] and o["rel_error"] <= r["tol_norm"] and o["max_error_rms"] > r["tol_elem"]


def test_tolerances_follow_the_arithmetic():
    t = D.tolerances
    assert t(COPY, {"N": 8}) == (0.0, 0.0)
    small, large = t(GEMM, {"K": 64}), t(GEMM, {"K": 1 << 22})
    assert small[0] < 1e-5 and small[1] < 1e-4 and large[0] > 10 * small[0]
    assert large[0] < 0.05 and large[1] < 0.5       # a missing eighth of K fails (0.35 norm)
    tf32 = dict(GEMM, arrays=dict(GEMM["arrays"], A={"dtype": "f32", "shape": ["M", "K"]}))
    assert 2.0 ** -10 < t(tf32, {"K": 64})[0] < 3e-3
    bf16_out = dict(GEMM, arrays=dict(GEMM["arrays"], C={"dtype": "bf16", "shape": ["M", "N"]}))
    assert 2.0 ** -8 < t(bf16_out, {"K": 64})[0] < 1e-2
    assert t(bf16_out, {"K": 4096})[1] < 0.1       # an element off by O(1) rms always fails


def test_chunked_references_equal_the_direct_product(monkeypatch):
    monkeypatch.setattr(D, "CHUNK", 64)                 # many row and K chunks
    rng = np.random.default_rng(0)
    A = rng.standard_normal((37, 50)).astype(np.float32)
    Bm = rng.standard_normal((11, 50)).astype(np.float32)
    C = (A.astype(np.float64) @ Bm.T.astype(np.float64)).astype(np.float32)
    case = dict(GEMM, arrays={n: {"dtype": "f32", "shape": []} for n in "ABC"})
    H = D.HostArrays(interpret=True)
    rows = list(D.reference_chunks(case, H, {"A": A, "B": Bm, "C": C}, {}, {}))
    assert len(rows) > 3
    ref = np.concatenate([r for _, _, r in rows])
    assert np.allclose(ref, A.astype(np.float64) @ Bm.T.astype(np.float64), rtol=1e-12)
    x = rng.standard_normal(50).astype(np.float32)
    y = (A.astype(np.float64) @ x).astype(np.float32)
    gemv = {"op": "gemv", "arrays": {n: {"dtype": "f32", "shape": []} for n in ("A", "x", "y")}}
    ref = np.concatenate([r for _, _, r in D.reference_chunks(gemv, H, {"A": A, "x": x, "y": y},
                                                               {}, {})])
    assert np.allclose(ref, A.astype(np.float64) @ x, rtol=1e-12)


def test_the_cupy_backend_code_on_numpy():
    C = D.CupyArrays(xp=np)
    x = np.random.default_rng(5).standard_normal(1000, dtype=np.float32)
    assert np.array_equal(C.rand(1000, "bf16", 5), D.bf16_bits(x))
    assert np.isnan(D.bf16_value(C.nan(4, "bf16"))).all()

    def gemm(args, grid):
        args["C"][...] = D.bf16_value(args["A"]) @ D.bf16_value(args["B"]).T
    assert D.check(GEMM, {"M": 64, "N": 32, "K": 48}, C, gemm)["ok"]


def test_inputs_are_random_and_bf16_rounds_to_nearest_even():
    import ml_dtypes
    x = np.random.default_rng(1).standard_normal(10000).astype(np.float32)
    x[:4] = [1.00390625, 1.01171875, -2.0078125, 3.0]   # ties: round to even
    want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(D.bf16_bits(x), want)
    assert np.array_equal(D.bf16_value(want), x.astype(ml_dtypes.bfloat16).astype(np.float32))
    a = D.HostArrays(interpret=True).rand((1000,), "f32", 3)
    assert np.all(a != 0) and abs(float(a.std()) - 1) < 0.1


def test_the_runner_imports_without_the_checker(tmp_path):
    env = gpu_dry.blocked_env(tmp_path)
    code = ("import sys; sys.path.insert(0, %r); import gpu_run, gpu_device, gpu_timing, "
            "gpu_report; gpu_device.launch_module(); print('ok')" % str(BENCH))
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    r = subprocess.run([sys.executable, "-c", "import exogpu_verify"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "not on the device" in r.stderr


# ---------------------------------------------------------------- reports
RES = {"meta": {"command": "x", "date": "d", "budget_s": 1, "bundle_created": "c",
                "commit": "h", "seconds": 1, "dry_run": False},
       "manifest": {"cases": []}, "probe": {}, "ceilings": {}, "correctness": {},
       "sanitizer": {}, "timing": {}}


def test_ingest_replaces_its_own_section(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "RESULTS.md").write_text(f"# other\nkeep me\n\n{R.BEGIN}\nold\n{R.END}\n# after\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text(json.dumps(RES))
    assert R.ingest(out, bench) == 0
    text = (bench / "RESULTS.md").read_text()
    assert "keep me" in text and "# after" in text and "old" not in text
    assert text.count(R.BEGIN) == 1 and "GPU validation and benchmarks" in text
    assert R.DRY not in text
    assert (bench / "gpu_results.json").exists()


@pytest.mark.parametrize("meta", [{"dry_run": True}, {}])
def test_ingest_refuses_a_dry_run(tmp_path, meta):
    bench = tmp_path / "bench"
    bench.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    res = dict(RES, meta={k: v for k, v in RES["meta"].items() if k != "dry_run"} | meta)
    (out / "results.json").write_text(json.dumps(res))
    assert R.ingest(out, bench) == 1
    assert not (bench / "RESULTS.md").exists()
    assert R.DRY in R.markdown(dict(res, meta=dict(res["meta"], dry_run=True)))


# ---------------------------------------------------------------- the dry run
@pytest.mark.slow
def test_dry_run_passes(tmp_path):
    if shutil.which("nvcc") is None:
        if os.environ.get("CI"):
            pytest.fail("nvcc is not on PATH in CI: the dry run must run there")
        pytest.skip("nvcc is not installed")
    bundle = tmp_path / "bundle"
    r = subprocess.run([sys.executable, str(BENCH / "gpu_run.py"), "--dry-run",
                        "--bundle", str(bundle), "--jobs", str(max(2, os.cpu_count() or 2))],
                       capture_output=True, text=True, timeout=3600, cwd=ROOT)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "dry run: OK" in out, out[-6000:]
    assert "carried to the device" in out and "device time estimate" in out
    m = json.loads((bundle / "manifest.json").read_text())
    names = {c["name"] for c in m["cases"]}
    assert spec_variant_names() <= names
    assert {"gemm_tma_wgmma", "vec_copy_threads"} <= names          # examples with a GPU path
    assert all(c["health"]["ok"] and c["health"]["sass_checked"] for c in m["cases"])
    assert not m["build_failures"]
    for c in m["cases"]:            # proven kernels through the gate; the rest labelled
        assert c["gate"] == "certificate" or c["gate"].startswith("unchecked: "), c["gate"]
        if c["group"] == "backend":
            assert c["gate"].startswith("unchecked: "), c["name"]
        if c["group"] == "specs":  # every variant proven, the 2x1 cluster GEMM included
            assert c["gate"] == "certificate", c["name"]
    assert all((bundle / c["lib"]).exists() and (bundle / c["cu"]).exists() for c in m["cases"])
    assert {p.name for p in (bundle / "runner").iterdir()} >= {"gpu_run.py", "launch.py"}
    total = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    assert total < 64 << 20
