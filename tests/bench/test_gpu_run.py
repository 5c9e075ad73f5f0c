"""The GPU run script (``bench/gpu_run.py``) without a GPU: the dry run end to end (slow: it
builds every kernel; it fails instead of skipping in CI when nvcc is missing), the parent's
survival of a hung and a crashed child, sizes derived from the asserts meeting the
sanitizer's requirements, the correctness harness on a hand-made case with a good and two
bad "kernels", bf16 rounding, and ``--ingest``."""

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
import gpu_report as R  # noqa: E402
import gpu_run  # noqa: E402


# ---------------------------------------------------------------- the parent
FAKE_CHILD = r"""
import json, os, sys, time
for item in sys.argv[1].split(","):
    print("@@START " + json.dumps(item), flush=True)
    if item == "hang":
        time.sleep(600)
    if item == "crash":
        print("a dying message", flush=True)
        os._exit(3)
    print("@@RESULT " + json.dumps({"item": item, "ok": True}), flush=True)
"""


def test_parent_survives_a_hung_and_a_crashed_item():
    logs = []
    t0 = time.time()
    res = gpu_run.run_items(lambda todo: [sys.executable, "-c", FAKE_CHILD, ",".join(todo)],
                            ["a", "hang", "b", "crash", "c"], item_timeout=3,
                            deadline=time.time() + 120, log=lambda m, echo=True: logs.append(m))
    assert time.time() - t0 < 60
    assert [res[i]["ok"] for i in "abc"] == [True, True, True]
    assert not res["hang"]["ok"] and res["hang"]["error"].startswith("timeout")
    assert not res["crash"]["ok"] and "exit 3" in res["crash"]["error"]
    assert "a dying message" in res["crash"]["log"]


def test_parent_stops_at_the_budget():
    res = gpu_run.run_items(lambda todo: [sys.executable, "-c", FAKE_CHILD, ",".join(todo)],
                            ["hang", "a"], item_timeout=60, deadline=time.time() + 3,
                            log=lambda m, echo=True: None)
    assert "budget" in res["hang"]["error"] and res["a"].get("skipped") == "device-time budget"


# ---------------------------------------------------------------- sizes
@pytest.fixture(scope="module")
def plan_cases():
    import gpu_plan as P
    return P, P.discover(with_examples=False, with_backend=True)


def test_sizes_follow_the_asserts_and_the_sanitizer_rules(plan_cases):
    P, cases = plan_cases
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
    gemm = next(c for c in cases if c.name == "gemm_bf16_f32_128x256_s4_coop_g2")
    assert P.moduli(gemm.proc) == {"M": 128, "N": 512, "K": 64}
    assert P.tolerance(gemm) == 1e-4


def test_a_missing_recipe_is_a_clear_error():
    import gpu_plan as P
    with pytest.raises(LookupError, match="add one to RECIPES"):
        P.recipe_for("specs/new_kernel.py", "new_kernel")


# ---------------------------------------------------------------- the correctness harness
CASE = {"name": "copy", "op": "copy", "moduli": {"N": 4}, "outputs": ["B"], "inout": [],
        "scalars": {}, "tolerance": 0.0,
        "arrays": {"A": {"dtype": "f32", "shape": ["N"]}, "B": {"dtype": "f32", "shape": ["N"]}}}
GEMM = {"name": "g", "op": "gemm_abt", "moduli": {"M": 1, "N": 1, "K": 1}, "outputs": ["C"],
        "inout": [], "scalars": {}, "tolerance": 1e-4,
        "arrays": {"A": {"dtype": "bf16", "shape": ["M", "K"]},
                   "B": {"dtype": "bf16", "shape": ["N", "K"]},
                   "C": {"dtype": "f32", "shape": ["M", "N"]}}}


def _gemm(args, grid):
    a = args["A"].astype(np.float32)
    b = args["B"].astype(np.float32)
    args["C"][...] = a @ b.T


def test_check_accepts_a_right_kernel_and_rejects_wrong_ones():
    B = D.HostArrays(interpret=True)

    def copy(args, grid):
        args["B"][...] = args["A"]
    assert D.check(CASE, {"N": 64}, B, copy)["ok"]

    def partial(args, grid):          # one element never written: stays NaN
        args["B"][:-1] = args["A"][:-1]
    r = D.check(CASE, {"N": 64}, B, partial)
    assert not r["ok"] and r["outputs"]["B"]["nonfinite"] == 1

    def zeros(args, grid):
        args["B"][...] = 0
    assert not D.check(CASE, {"N": 64}, B, zeros)["ok"]
    r = D.check(GEMM, {"M": 96, "N": 80, "K": 72}, B, _gemm)
    assert r["ok"] and r["outputs"]["C"]["rel_error"] < 1e-6

    def transposed(args, grid):      # C = A @ B instead of A @ B.T on a square problem
        args["C"][...] = args["A"].astype(np.float32) @ args["B"].astype(np.float32)
    assert not D.check(GEMM, {"M": 64, "N": 64, "K": 64}, B, transposed)["ok"]


def test_inputs_are_random_and_bf16_rounds_to_nearest_even():
    import ml_dtypes
    x = np.random.default_rng(1).standard_normal(10000).astype(np.float32)
    x[:4] = [1.00390625, 1.01171875, -2.0078125, 3.0]   # ties: round to even
    want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(D.bf16_bits(x), want)
    assert np.array_equal(D.bf16_value(want), x.astype(ml_dtypes.bfloat16).astype(np.float32))
    a = D.HostArrays(interpret=True).rand((1000,), "f32", 3)
    assert np.all(a != 0) and abs(float(a.std()) - 1) < 0.1


# ---------------------------------------------------------------- reports
def test_ingest_replaces_its_own_section(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "RESULTS.md").write_text(f"# other\nkeep me\n\n{R.BEGIN}\nold\n{R.END}\n# after\n")
    res = {"meta": {"command": "x", "date": "d", "budget_s": 1, "bundle_created": "c",
                    "commit": "h", "seconds": 1}, "manifest": {"cases": []}, "probe": {},
           "ceilings": {}, "correctness": {}, "sanitizer": {}, "timing": {}}
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text(json.dumps(res))
    assert R.ingest(out, bench) == 0
    text = (bench / "RESULTS.md").read_text()
    assert "keep me" in text and "# after" in text and "old" not in text
    assert text.count(R.BEGIN) == 1 and "GPU validation and benchmarks" in text
    assert (bench / "gpu_results.json").exists()


# ---------------------------------------------------------------- the dry run
@pytest.mark.slow
def test_dry_run_passes(tmp_path):
    if shutil.which("nvcc") is None:
        if os.environ.get("CI"):
            pytest.fail("nvcc is not on PATH in CI: the dry run must run there")
        pytest.skip("nvcc is not installed")
    bundle = tmp_path / "bundle"
    r = subprocess.run([sys.executable, str(BENCH / "gpu_run.py"), "--dry-run", "--quick",
                        "--bundle", str(bundle), "--jobs", str(max(2, os.cpu_count() or 2))],
                       capture_output=True, text=True, timeout=7200, cwd=ROOT)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "dry run: OK" in out, out[-6000:]
    assert "carried to the device" in out and "device time estimate" in out
    m = json.loads((bundle / "manifest.json").read_text())
    names = {c["name"] for c in m["cases"]}
    assert {"gemv_f32_r4_u2_w8_b4", "gemm_bf16_f32_128x256_s4_coop_g2", "vec_copy"} <= names
    assert all(c["health"]["ok"] for c in m["cases"]) and not m["build_failures"]
    assert all((bundle / c["lib"]).exists() and (bundle / c["cu"]).exists() for c in m["cases"])
