"""Reports of the GPU run (``bench/gpu_run.py``): ``results.json``, ``RESULTS.md``, a PNG plot,
the short table printed last on the device, and ``--ingest`` (the device's output folder into
``bench/RESULTS.md``, ``bench/gpu_results.json``, ``bench/gpu_plot.png``). A dry run's
report (synthetic numbers, no GPU) says so in its first lines and is never ingested.

Every ratio is against numbers from the same run: cuBLAS on the same sizes (interleaved with
ours) and the ceilings measured first. Goals checked (issue 13): TF32 >= 0.95x cuBLAS and
>= 76% of 494.7 TFLOP/s on squares >= 4096; BF16 >= 1.0x cuBLAS geomean over squares
2048..8192 and >= 742 TFLOP/s at 8192^3; split-K skinny (N=1536, K=65536, M=256..4096)
geomean >= 1.0x; GEMV (M=K >= 16384) >= 1.0x cuBLAS and >= 3650 GB/s.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- gpu_run.py: begin -->", "<!-- gpu_run.py: end -->"
DRY = "**DRY RUN: synthetic numbers from a machine without a GPU; nothing here was measured.**"


def ceiling_text(c: dict) -> str:
    if "copy_GBps" not in c:
        return json.dumps(c)[:300]
    return (f"copy {c['copy_GBps']:.0f} GB/s; " +
            (f"bf16 8192^3 {c['matmul_TFLOPs']:.0f} TFLOP/s" if "matmul_TFLOPs" in c
             else c.get("matmul_error", "")))


# ---------------------------------------------------------------- timing analysis
def _key(sizes: dict) -> tuple:
    return tuple(sorted(sizes.items()))


def _variant_mode(case: dict) -> str:
    a = case["arrays"].get("A", {}).get("dtype", "f32")
    return "bf16" if a == "bf16" else ("tf32" if case["tensor_cores"] else "f32")


def rows(res: dict) -> list[dict]:
    """One row per (our case, size) with its baseline, ratio and % of the ceiling."""
    items = (res.get("timing") or {}).get("items", [])
    cases = {c["name"]: c for c in res["manifest"]["cases"]}
    ceil = res.get("ceilings") or {}
    base = {}
    for it in items:
        if it["kind"] == "baseline" and "rate" in it:
            base.setdefault((it["op"], it["mode"], _key(it["sizes"])), []).append(it)
    out = []
    for it in items:
        if it["kind"] != "ours":
            continue
        c = cases.get(it["case"], {})
        mode = _variant_mode(c) if c else "?"
        cands = base.get((c.get("op"), mode, _key(it["sizes"])), [])
        out_dt = c.get("arrays", {}).get(c.get("outputs", ["C"])[0] if c.get("outputs") else "",
                                         {}).get("dtype")
        pick = None
        for b in cands:                # same output type first (f32 out vs bf16 out)
            if (out_dt == "f32") == ("f32 out" in b["case"]) or mode != "bf16":
                pick = b
                break
        pick = pick or (cands[0] if cands else None)
        r = {"case": it["case"], "family": it["family"], "mode": mode, "sizes": it["sizes"],
             "unit": it["unit"], "error": it.get("error")}
        if "rate" in it:
            r.update(ms=it["median_ms"], rate=it["rate"], p10=it["p10_ms"], p90=it["p90_ms"])
            if pick:
                r.update(baseline=pick["case"], baseline_rate=pick["rate"],
                         ratio=it["rate"] / pick["rate"])
            cap = ceil.get("matmul_TFLOPs") if it["unit"] == "TFLOP/s" else ceil.get("copy_GBps")
            if cap:
                r["of_ceiling"] = it["rate"] / cap
        out.append(r)
    return out


def _geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def goals(rs: list[dict]) -> list[str]:
    """Issue 13's goals, per variant, from the rows of this run."""
    lines = []
    by: dict = {}
    for r in rs:
        if "rate" in r:
            by.setdefault(r["case"], []).append(r)

    def sq(r, lo, hi=10**9):
        s = r["sizes"]
        return s.get("M") == s.get("N") == s.get("K") and lo <= s["M"] <= hi

    for name, lst in sorted(by.items()):
        mode = lst[0]["mode"]
        if lst[0]["family"] != "gemm" and lst[0]["family"] != "gemv":
            continue
        if lst[0]["family"] == "gemv":
            big = [r for r in lst if r["sizes"].get("M") == r["sizes"].get("K") >= 16384]
            g = _geomean([r.get("ratio") for r in big])
            best = max((r["rate"] for r in big), default=0)
            lines.append(f"{name}: M=K >= 16384: {_fmt(g)}x cuBLAS (goal >= 1.0), best "
                         f"{best:.0f} GB/s (goal >= 3650)")
            continue
        if mode == "tf32":
            sel = [r for r in lst if sq(r, 4096)]
            g = _geomean([r.get("ratio") for r in sel])
            worst = min((r["rate"] / 494.7 for r in sel), default=0)
            lines.append(f"{name}: squares >= 4096: {_fmt(g)}x cuBLAS tf32 (goal >= 0.95), "
                         f"worst {100 * worst:.0f}% of 494.7 TFLOP/s (goal >= 76%)")
        elif mode == "bf16":
            sel = [r for r in lst if sq(r, 2048, 8192)]
            g = _geomean([r.get("ratio") for r in sel])
            at = [r["rate"] for r in lst if sq(r, 8192, 8192)]
            sk = [r for r in lst if r["sizes"].get("N") == 1536 and r["sizes"].get("K") == 65536]
            gs = _geomean([r.get("ratio") for r in sk])
            lines.append(f"{name}: squares 2048..8192 {_fmt(g)}x cuBLAS (goal >= 1.0); 8192^3 "
                         f"{at[0] if at else 0:.0f} TFLOP/s (goal >= 742); skinny N=1536 "
                         f"K=65536 {_fmt(gs)}x (split-K goal >= 1.0)")
    return lines


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


# ---------------------------------------------------------------- markdown
def _sz(s: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in s.items() if k not in ("largest",))


def markdown(res: dict) -> str:
    m, p, ceil = res["meta"], res.get("probe") or {}, res.get("ceilings") or {}
    L = [BEGIN, "# GPU validation and benchmarks (`bench/gpu_run.py`)", ""]
    if m.get("dry_run"):
        L += [DRY, ""]
    smi = str(res.get("nvidia_smi", "")).splitlines()
    L += [f"- Date: {m['date']}; device time {m.get('seconds', '?')} s of a "
          f"{float(m['budget_s']):.0f} s budget",
          f"- Machine: {p.get('gpu', '?')}, {p.get('sms', '?')} SMs, L2 {p.get('l2_MiB', '?')} "
          f"MiB, {p.get('memory_GiB', '?')} GiB, compute capability {p.get('capability', '?')}",
          f"- nvidia-smi: `{smi[0] if smi else ''}` = `{smi[1] if len(smi) > 1 else ''}`",
          f"- Software: Python {p.get('python')}, numpy {p.get('numpy')}, torch {p.get('torch')}, "
          f"cupy {p.get('cupy')}; CUDA {p.get('cuda')}; backend {p.get('backend')}; "
          f"compute-sanitizer {res.get('compute_sanitizer', '?')}",
          f"- Command: `{m['command']}`; bundle built {m['bundle_created']} at commit "
          f"{m['commit']}{' (uncommitted changes)' if m.get('dirty') else ''}",
          f"- Libraries: {res.get('libraries')}", ""]
    L += ["## Ceilings (measured in this run)", ""]
    after = (res.get("timing") or {}).get("ceilings_after") or {}
    for label, c in (("before", ceil), ("after timing", after)):
        if "copy_GBps" in c:
            L.append(f"- {label}: device copy {c['copy_GBps']:.0f} GB/s (read + written, 2 GiB); "
                     + (f"{c.get('matmul_how')}: {c['matmul_TFLOPs']:.0f} TFLOP/s"
                        if "matmul_TFLOPs" in c else c.get("matmul_error", "")))
        elif c:
            L.append(f"- {label}: {json.dumps(c)[:300]}")
    L += ["", "## Correctness (random inputs, NaN-filled outputs, float64 reference)", "",
          "Errors: norm-wise `||out - ref|| / ||ref||` and the largest element error in units "
          "of rms(ref), each against its tolerance (`gpu_device.tolerances`).", "",
          "| case | gate | sizes passed | worst norm error / tol | worst element error / tol "
          "| failures |", "|---|---|---:|---|---|---|"]
    cases = {c["name"]: c for c in res["manifest"]["cases"]}
    for name, runs in (res.get("correctness") or {}).items():
        c = cases[name]
        okn = sum(1 for r in runs if r.get("ok"))
        outs = [(o, r) for r in runs for o in r.get("outputs", {}).values() if "rel_error" in o]
        wn = max(outs, key=lambda x: x[0]["rel_error"] / max(x[1]["tol_norm"], 1e-300),
                 default=None)
        we = max(outs, key=lambda x: x[0]["max_error_rms"] / max(x[1]["tol_elem"], 1e-300),
                 default=None)
        fails = "; ".join(f"{_sz(c['sizes']['correct'][i])}: {r.get('error') or _outs(r)}"
                          for i, r in enumerate(runs) if not r.get("ok"))[:400]
        L.append(f"| {name} | {c['gate'].split(':')[0]} | {okn}/{len(runs)} | "
                 + (f"{wn[0]['rel_error']:.2e} / {wn[1]['tol_norm']:.1e}" if wn else "-")
                 + " | "
                 + (f"{we[0]['max_error_rms']:.2e} / {we[1]['tol_elem']:.1e}" if we else "-")
                 + f" | {fails} |")
    L += ["", "## compute-sanitizer (every SMEM ring wrapped twice, two tasks per CTA)", "",
          "| case | sizes | tasks / CTAs / ring wraps | racecheck | synccheck | memcheck |",
          "|---|---|---|---|---|---|"]
    for name, t in (res.get("sanitizer") or {}).items():
        f = cases[name]["sizes"].get("sanitize_facts", {})
        L.append(f"| {name} | {_sz(cases[name]['sizes']['sanitize'])} | {f.get('tasks')} / "
                 f"{f.get('ctas')} / {f.get('ring_wraps')} | " + " | ".join(
                     _san(t.get(x, {})) for x in ("racecheck", "synccheck", "memcheck")) + " |")
    rs = rows(res)
    L += ["", "## Timing (CUDA events, L2 flushed before each sample, shuffled rounds; medians)",
          "", f"Rounds: {(res.get('timing') or {}).get('rounds')}, framework "
          f"{(res.get('timing') or {}).get('framework')}.", "",
          "| case | sizes | ms (p10-p90) | rate | baseline | baseline rate | ratio | % of ceiling |",
          "|---|---|---:|---:|---|---:|---:|---:|"]
    for r in rs:
        if "rate" not in r:
            L.append(f"| {r['case']} | {_sz(r['sizes'])} | failed: {r.get('error')} ||||||")
            continue
        L.append(f"| {r['case']} | {_sz(r['sizes'])} | {r['ms']:.4f} ({r['p10']:.4f}-"
                 f"{r['p90']:.4f}) | {r['rate']:.1f} {r['unit']} | {r.get('baseline', '-')} | "
                 f"{r.get('baseline_rate', 0):.1f} | {_fmt(r.get('ratio'))} | "
                 f"{100 * r.get('of_ceiling', 0):.0f}% |")
    for it in (res.get("timing") or {}).get("items", []):
        if it["kind"] == "baseline" and "rate" in it:
            L.append(f"| ({it['case']}) | {_sz(it['sizes'])} | {it['median_ms']:.4f} | "
                     f"{it['rate']:.1f} {it['unit']} | | | | |")
    if "error" in (res.get("timing") or {}):
        L.append(f"\nTiming failed: {str(res['timing']['error'])[:500]}")
    L += ["", "## Goals (issue 13)", ""] + [f"- {g}" for g in goals(rs)]
    L += ["", "## Builds in the bundle", "", "| case | regs | stack | spills | dyn. smem | "
          "healthy |", "|---|---:|---:|---:|---:|---|"]
    for c in res["manifest"]["cases"]:
        for r, k in zip(c["resources"], c["kernels"]):
            L.append(f"| {c['name']} | {r['registers']} | {r['stack_bytes']} | "
                     f"{r['spill_stores'] + r['spill_loads']} | {k['smem_bytes']} | "
                     f"{'yes' if c['health']['ok'] else '; '.join(c['health']['issues'])} |")
    L += ["", "Every number of the run (all samples' percentiles, per-size errors, sanitizer "
          "summaries) is in `gpu_results.json`; the plot is `gpu_plot.png`.", END, ""]
    return "\n".join(L)


def _outs(r: dict) -> str:
    return ", ".join(f"{n}: " + (o["error"] if "error" in o else
                                 f"norm {o['rel_error']:.2e}, element {o['max_error_rms']:.2e}"
                                 f" rms, {o['nonfinite']} non-finite, {o['compared']} compared")
                     for n, o in r.get("outputs", {}).items() if not o["ok"])


def _san(r: dict) -> str:
    if not r:
        return "-"
    s = r["status"]
    return s if s == "ok" else f"**{s}** {' '.join(r.get('summary', []))[:120]}"


def short_table(res: dict) -> str:
    """The last thing printed on the device: one line per case."""
    out = [""] + (["DRY RUN (synthetic numbers)"] if res["meta"].get("dry_run") else []) + \
        [f"{'case':45s} {'correct':>8s} {'race/sync/mem':>14s} {'best rate':>14s} "
           f"{'vs cuBLAS':>9s}"]
    rs = rows(res)
    for name, runs in (res.get("correctness") or {}).items():
        okn = sum(1 for r in runs if r.get("ok"))
        t = (res.get("sanitizer") or {}).get(name, {})
        san = "/".join((t.get(x, {}).get("status", "-") or "-")[:4] for x in
                       ("racecheck", "synccheck", "memcheck"))
        mine = [r for r in rs if r["case"] == name and "rate" in r]
        best = max(mine, key=lambda r: r["rate"], default=None)
        rate = f"{best['rate']:.0f} {best['unit']}" if best else "-"
        ratio = _fmt(_geomean([r.get("ratio") for r in mine])) if mine else "-"
        out.append(f"{name:45s} {okn:>3d}/{len(runs):<4d} {san:>14s} {rate:>14s} {ratio:>9s}")
    c = res.get("ceilings") or {}
    out.append(f"ceilings: copy {c.get('copy_GBps', 0):.0f} GB/s, bf16 8192^3 "
               f"{c.get('matmul_TFLOPs', 0):.0f} TFLOP/s; device time "
               f"{res['meta'].get('seconds')} s")
    return "\n".join(out)


# ---------------------------------------------------------------- plot
def plot(res: dict, path: Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 - no plot without matplotlib
        return False
    rs = [r for r in rows(res) if "rate" in r]
    base = [it for it in (res.get("timing") or {}).get("items", [])
            if it["kind"] == "baseline" and "rate" in it]
    panels = [("GEMM bf16, squares (TFLOP/s)", lambda s, m: m == "bf16" and s.get("M") == s.get("N"), "M"),
              ("GEMM tf32, squares (TFLOP/s)", lambda s, m: m == "tf32" and s.get("M") == s.get("N"), "M"),
              ("GEMM bf16, N=1536 K=65536 (TFLOP/s)", lambda s, m: m == "bf16" and s.get("N") == 1536, "M"),
              ("GEMV f32, M=K (GB/s)", lambda s, m: "K" in s and "N" not in s, "M")]
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    for ax, (title, sel, x) in zip(axes.flat, panels):
        series: dict = {}
        for r in rs:
            if r["family"] in ("gemm", "gemv") and sel(r["sizes"], r["mode"]):
                series.setdefault(r["case"], []).append((r["sizes"][x], r["rate"]))
        for b in base:
            if sel(b["sizes"], b["mode"]):
                series.setdefault(b["case"], []).append((b["sizes"][x], b["rate"]))
        for name, pts in sorted(series.items()):
            pts.sort()
            style = "--" if "cuBLAS" in name or "cupy" in name else "-"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=name)
        ax.set_title(title)
        ax.set_xlabel(x)
        ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
        if series:
            ax.legend(fontsize=6)
    p = res.get("probe") or {}
    fig.suptitle(("DRY RUN, synthetic numbers: " if res["meta"].get("dry_run") else "")
                 + f"exogpu generated kernels vs cuBLAS on {p.get('gpu', '?')} "
                 f"({res['meta']['date']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------- files
def write_all(res: dict, out: Path) -> bool:
    """results.json, RESULTS.md and gpu_plot.png in ``out``; False when no plot could be drawn
    (no matplotlib)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    (out / "RESULTS.md").write_text(markdown(res))
    return plot(res, out / "gpu_plot.png")


def ingest(d: Path, bench: Path = HERE) -> int:
    """Copy a device run's output into bench/: the RESULTS.md section (replacing the one
    between the markers, or appended), gpu_results.json and gpu_plot.png. Refuses a dry
    run's output (exit 1)."""
    path = Path(d) / "results.json"
    if not path.exists():
        print(f"{path}: no such file (give the folder the device run wrote)")
        return 1
    res = json.loads(path.read_text())
    if (res.get("meta") or {}).get("dry_run") is not False:
        print(f"{path} is not from a device run (a dry run's synthetic numbers, or no "
              "'dry_run': false in its meta): not ingested")
        return 1
    section = markdown(res)
    target = bench / "RESULTS.md"
    text = target.read_text() if target.exists() else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section.rstrip("\n") + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    target.write_text(text)
    (bench / "gpu_results.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    if (d / "gpu_plot.png").exists():
        shutil.copyfile(d / "gpu_plot.png", bench / "gpu_plot.png")
    else:
        plot(res, bench / "gpu_plot.png")
    print(f"wrote {target}, {bench / 'gpu_results.json'}, {bench / 'gpu_plot.png'}")
    return 0
