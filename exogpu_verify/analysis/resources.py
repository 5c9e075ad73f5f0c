"""Launch resources (kind ``resource``): each kernel fits the hardware it is launched on.

``check_resources(p, cinfo, layouts)`` establishes, for every ``CudaDeviceFunction`` (numbers
from ``exogpu_verify.platforms.limits``, Hopper by default):

* ``blockDim`` at most 1024 threads, ``blockDim * blocks_per_sm`` at most 2048 per SM;
* ``clusterDim`` at most 8, or 16 with ``CudaDeviceFunction(non_portable_cluster=True)``;
* the static SMEM layout (the one codegen emits, ``smem_layout``) at most 227 KB per CTA,
  and ``blocks_per_sm`` of them (plus 1 KB reserved each) within the SM's 228 KB;
* registers: the launch gives each thread ``R = 65536 / (blockDim * blocks_per_sm)``
  registers (in units of 8, at most 256), the CTA's pool; every ``setmaxnreg`` value of the
  warp configuration is in [24, 256] and a multiple of 8, a ``setmaxnreg_dec`` is at most
  ``R`` and a ``setmaxnreg_inc`` at least ``R``, a warp group that changes its budget is
  whole warpgroups (the instruction is executed by all 4 warps of one), and the budgets after
  the changes fit the pool (``setmaxnreg.inc`` blocks until the pool has the registers: a
  kernel asking for more than the pool hangs);
* named barriers: every ``Fence`` run by a set of whole warps smaller than the CTA is a
  named barrier (``bar.sync id, n``); ``named_barriers.allocate_named_barriers`` gives each
  distinct warp set an id and reports a kernel needing more than the 15 beyond the CTA
  barrier (kind ``resource``); here the count is recorded as a fact.

Each fact is returned as a ``CheckedFact`` (for certificates) and each violation as a
located diagnostic. It assumes the collective analysis succeeded.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..ir import nodes as N
from ..platforms import limits as HW
from .conditions import CheckedFact
from .mapping import CollectiveInfo


def check_resources(p: N.Procedure, cinfo: CollectiveInfo, layouts: list, named=None,
                    arch: str = HW.DEFAULT_ARCH) -> tuple[list[Diagnostic], list[CheckedFact]]:
    """Resource facts and violations of every kernel of ``p``; see the module docstring."""
    lim = HW.LIMITS[arch]
    diags: list[Diagnostic] = []
    facts: list[CheckedFact] = []
    lay_by_path = {k.kernel: k for k in layouts}
    for k in cinfo.kernels:
        cfg = k.config
        stmt = _stmt_at(p, k.path)
        si = stmt.srcinfo if stmt is not None else p.srcinfo

        def fact(name: str, ok: bool, msg: str, hint: str | None = None, where=None):
            facts.append(CheckedFact("resource", name, ok, (where or si).line if (where or si)
                                     else None))
            if not ok:
                diags.append(Diagnostic.at("resource", msg, where or si, hint))

        B, CL, bps = cfg.blockDim, cfg.clusterDim, cfg.blocks_per_sm
        fact(f"blockDim {B} <= {lim.max_threads_per_cta}", B <= lim.max_threads_per_cta,
             f"blockDim {B} exceeds the {lim.max_threads_per_cta} threads a CTA may have",
             "use fewer warps per CTA")
        fact(f"blockDim * blocks_per_sm = {B * bps} <= {lim.max_threads_per_sm}",
             B * bps <= lim.max_threads_per_sm,
             f"{bps} CTAs of {B} threads per SM exceed the {lim.max_threads_per_sm} resident "
             "threads of an SM", "lower blocks_per_sm")
        cmax = lim.max_cluster_non_portable if getattr(cfg, "non_portable_cluster", False) \
            else lim.max_cluster_portable
        fact(f"clusterDim {CL} <= {cmax}", CL <= cmax,
             f"clusterDim {CL} exceeds the {cmax} CTAs of a "
             f"{'non-portable' if cmax > lim.max_cluster_portable else 'portable'} cluster",
             f"clusters of up to {lim.max_cluster_non_portable} CTAs need "
             "CudaDeviceFunction(..., non_portable_cluster=True)"
             if cmax == lim.max_cluster_portable and CL <= lim.max_cluster_non_portable
             else f"use at most {lim.max_cluster_non_portable} CTAs per cluster")
        kl = lay_by_path.get(k.path)
        if kl is not None:
            need = kl.layout.bytes_needed
            fact(f"dynamic SMEM {need} bytes <= {lim.smem_per_cta}", need <= lim.smem_per_cta,
                 f"the kernel's shared memory needs {need} bytes per CTA (static layout, "
                 f"{kl.layout.size} bytes of allocations and mbarriers plus alignment slack); "
                 f"a CTA may have at most {lim.smem_per_cta} bytes ({lim.smem_per_cta // 1024} "
                 f"KB) on {lim.arch}", "use smaller tiles or fewer pipeline stages")
            if bps > 1 and need:
                per_sm = bps * (need + lim.smem_reserved_per_cta)
                fact(f"blocks_per_sm * (SMEM + {lim.smem_reserved_per_cta}) = {per_sm} <= "
                     f"{lim.smem_per_sm}", per_sm <= lim.smem_per_sm,
                     f"{bps} CTAs per SM need {per_sm} bytes of shared memory (with "
                     f"{lim.smem_reserved_per_cta} reserved per CTA); an SM has "
                     f"{lim.smem_per_sm}", "lower blocks_per_sm")
        _registers(cfg, lim, fact)
    if named is not None and not named.diagnostics:
        n = named.ids_used + 1
        facts.append(CheckedFact("resource", f"hardware barriers per CTA {n} (named and id 0) "
                                 f"<= {lim.named_barriers}", n <= lim.named_barriers,
                                 p.srcinfo.line if p.srcinfo else None))
    return diags, facts


def _stmt_at(p: N.Procedure, path):
    stmts, s = p.body, None
    for fld, i in path:
        if s is not None:
            stmts = getattr(s, fld)
        s = stmts[i]
    return s


def _registers(cfg: N.CudaDeviceFunction, lim: HW.Limits, fact) -> None:
    B, bps = cfg.blockDim, cfg.blocks_per_sm
    R = HW.launch_registers(lim, B, bps)
    fact(f"launch registers per thread {R} >= {HW.SETMAXNREG_MIN}", R >= HW.SETMAXNREG_MIN,
         f"{bps} CTA(s) of {B} threads leave {R} registers per thread (the register file has "
         f"{lim.regs_per_sm}); at least {HW.SETMAXNREG_MIN} are needed", "lower blocks_per_sm")
    groups = cfg.warp_config
    if not any(g.setmaxnreg_dec is not None or g.setmaxnreg_inc is not None for g in groups):
        return
    total = 0
    for g in groups:
        w0, w1 = cfg.warp_range(g.name)
        val = g.setmaxnreg_dec if g.setmaxnreg_dec is not None else g.setmaxnreg_inc
        action = "dec" if g.setmaxnreg_dec is not None else ("inc" if val is not None else "")
        regs = R if val is None else val
        total += (w1 - w0) * 32 * regs
        if val is None:
            continue
        what = f"CudaWarpConfig({g.name!r}) setmaxnreg_{action}={val}"
        ok = HW.SETMAXNREG_MIN <= val <= HW.SETMAXNREG_MAX and val % HW.SETMAXNREG_STEP == 0
        fact(f"{what} in [{HW.SETMAXNREG_MIN}, {HW.SETMAXNREG_MAX}], multiple of "
             f"{HW.SETMAXNREG_STEP}", ok,
             f"{what}: setmaxnreg takes a register count in [{HW.SETMAXNREG_MIN}, "
             f"{HW.SETMAXNREG_MAX}] that is a multiple of {HW.SETMAXNREG_STEP}",
             f"round it to a multiple of {HW.SETMAXNREG_STEP} inside the range")
        whole = w0 % 4 == 0 and (w1 - w0) % 4 == 0
        fact(f"{what}: warps [{w0}, {w1}) are whole warpgroups", whole,
             f"{what}: the group is warps [{w0}, {w1}), but setmaxnreg is executed by all 4 "
             "warps of a warpgroup, so a group that changes its register budget must be "
             "whole, aligned warpgroups", "make the group's warp count a multiple of 4 "
             "starting at a multiple of 4")
        if action == "dec":
            fact(f"{what} <= launch registers {R}", val <= R,
                 f"{what} is more than the {R} registers per thread the launch gives "
                 f"(blockDim {B}, {bps} CTA(s) per SM): setmaxnreg.dec can only release "
                 "registers", f"use at most {R}, or setmaxnreg_inc")
        else:
            fact(f"{what} >= launch registers {R}", val >= R,
                 f"{what} is less than the {R} registers per thread the launch gives "
                 f"(blockDim {B}, {bps} CTA(s) per SM): setmaxnreg.inc can only add "
                 "registers", f"use at least {R}, or setmaxnreg_dec")
    pool = B * R
    fact(f"registers after setmaxnreg {total} <= CTA pool {pool}", total <= pool,
         f"after setmaxnreg the warp groups hold {total} registers "
         f"({', '.join(_budget(cfg, g, R) for g in groups)}), more than the CTA's pool of "
         f"{pool} ({B} threads x {R} registers at launch): setmaxnreg.inc would wait forever",
         "lower the consumers' setmaxnreg_inc or the producers' setmaxnreg_dec")


def _budget(cfg, g, R) -> str:
    w0, w1 = cfg.warp_range(g.name)
    v = g.setmaxnreg_dec if g.setmaxnreg_dec is not None else g.setmaxnreg_inc
    return f"{g.name}: {(w1 - w0) * 32} x {R if v is None else v}"


__all__ = ["check_resources"]
