"""Sm90 TMA (bulk tensor copy) instruction families, ranks 1 to 5 (PTX ISA 9.7.9.25).

``tma_load_{r}d_{T}(n0.., dst, src) >> mbar``: SMEM tile ``dst`` = tensor-map window ``src``
(``cuda_warp``, ``tma_to_smem_async_instr``, completes on a ``CudaMbarrier``: lane 0 issues
``mbarrier.expect_tx`` for the tile's bytes, then ``cp.async.bulk.tensor``).
``tma_multicast_{r}d_{T}_x{c}(n0.., dst, src) >> z[:, i]``: every CTA of a group of ``c``
consecutive cluster ranks receives the whole tile into its shard ``dst[cta]``; CTA ``j`` of
the group loads rows ``[j*n0/c, (j+1)*n0/c)`` and multicasts them (``c * cuda_warp_in_cluster``;
the tensor map's box is the per-CTA slice ``(n0/c, n1, ...)``; for swizzled SMEM ``n0/c`` must be a
multiple of 8 rows). ``tma_store_{r}d_{T}(n0.., dst, src)``: window ``dst`` = SMEM ``src``;
``tma_reduce_add_{r}d_{T}``: ``dst += src`` atomically (``tma_to_gmem_async_instr``;
completion through ``Arrive(tma_to_gmem_async) >> cg`` on an ``Sm90_TmaCommitGroup``).

Every member declares ``checks=(TensorMapCopy(...),)`` (``ir.checks``): at each call
the checker requires the tensor map's box to be the copied tile (the per-CTA slice for a
multicast), its swizzle and element type to be the SMEM tile's (``Sm90_SmemSwizzled(s)`` for
``Sm90_tensorMap(s, ...)``, ``CudaSmemLinear`` for 0), the SMEM tile to start 128-byte aligned
(on a swizzle atom when swizzled), and for loads the mbarrier's transaction bytes
(``LOAD_CHECK.expect_tx_bytes``, which the generated ``mbarrier.expect_tx`` uses) to equal the
bytes delivered. Out-of-bounds boxes (TMA zero-fills / clips) are not modelled: windows must
be in bounds.
"""

from __future__ import annotations

from math import prod

from ..frontend.decorators import instr
from ..ir.memories import RAM_QUALS, CudaBasicSmem, CudaMbarrier, Memory, _freeze
from ..ir.timelines import tma_to_gmem_async_instr, tma_to_smem_async_instr
from ..ir.units import (cuda_cta_in_cluster, cuda_warp, cuda_warp_in_cluster,
                        cuda_warp_in_cluster_strided)
from ._ptx import HELPERS_KEY, coords_of, size_arg
from ..ir.checks import TensorMapCopy

#: the declared precondition of loads and stores (tensor map, SMEM tile)
LOAD_CHECK = TensorMapCopy("src", "dst")
STORE_CHECK = TensorMapCopy("dst", "src")

#: parameter memory of TMA instructions: any ``Sm90_tensorMap(swizzle, *box)`` window
Sm90_tensorMapAny = Memory("Sm90_tensorMapAny", (), "abstract", "none", None,
                           _freeze(RAM_QUALS), accepts=frozenset({"Sm90_tensorMap"}),
                           abstract=True)


def _ptx_coords(coords: list[str], first: int) -> tuple[str, list[str]]:
    """PTX ``{%a, %b, ...}`` (innermost coordinate first) and the matching operands."""
    rev = list(reversed(coords))
    return ("{" + ", ".join(f"%{first + i}" for i in range(len(rev))) + "}",
            [f'"r"(int32_t({c}))' for c in rev])


def _map_operand(expr: str) -> str:
    return f'"l"(reinterpret_cast<uint64_t>(&({expr})))'


def load_codegen(rank: int, T):
    def gen(a: dict) -> str:
        n = [size_arg(a, f"n{d}") for d in range(rank)]
        nbytes = LOAD_CHECK.expect_tx_bytes(n, T.nbytes)
        coords = coords_of(a, "src")
        vec, cops = _ptx_coords(coords, 2)
        r = len(coords)
        return ("if (exo_lane_id() == 0) { "
                'asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\\n" '
                f':: "r"(uint32_t({a["_mbar"]})), "n"({nbytes}) : "memory"); '
                f'asm volatile("cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.'
                f'mbarrier::complete_tx::bytes [%0], [%1, {vec}], [%{2 + r}];\\n" :: '
                f'"r"(exo_smem_u32({a["dst"]})), {_map_operand(a["src"])}, {", ".join(cops)}, '
                f'"r"(uint32_t({a["_mbar"]})) : "memory"); }}')
    return gen


def multicast_codegen(rank: int, T, ncta: int, cta_stride: int):
    pattern = sum(1 << (j * cta_stride) for j in range(ncta))
    check = multicast_check(ncta, cta_stride)

    def gen(a: dict) -> str:
        n = [size_arg(a, f"n{d}") for d in range(rank)]
        total = check.expect_tx_bytes(n, T.nbytes)
        slice_rows = n[0] // ncta
        slice_elems = slice_rows * prod(n[1:])
        coords = coords_of(a, "src")
        dims = a.get("src_dims") or list(range(len(coords)))
        coords = list(coords)
        d0 = dims[0]
        coords[d0] = f"({coords[d0]}) + int32_t(exo_c) * {slice_rows}"
        vec, cops = _ptx_coords(coords, 2)
        r = len(coords)
        return ("if (exo_lane_id() == 0) { "
                "const uint32_t exo_rank = exo_cluster_ctarank(); "
                f"const uint32_t exo_c = (exo_rank / {cta_stride}) % {ncta}; "
                f"const uint16_t exo_mask = uint16_t({pattern}u << (exo_rank - exo_c * "
                f"{cta_stride})); "
                'asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\\n" '
                f':: "r"(uint32_t({a["_mbar"]})), "n"({total}) : "memory"); '
                f'asm volatile("cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.'
                f'mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {vec}], '
                f'[%{2 + r}], %{3 + r};\\n" :: '
                f'"r"(exo_smem_u32(({a["dst"]}) + exo_c * {slice_elems})), '
                f'{_map_operand(a["src"])}, {", ".join(cops)}, "r"(uint32_t({a["_mbar"]})), '
                '"h"(exo_mask) : "memory"); }')
    return gen


def store_codegen(rank: int, reduce: bool):
    def gen(a: dict) -> str:
        coords = coords_of(a, "dst")
        vec, cops = _ptx_coords(coords, 1)
        r = len(coords)
        op = (f"cp.reduce.async.bulk.tensor.{r}d.global.shared::cta.add.tile.bulk_group"
              if reduce else f"cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group")
        return ("if (exo_lane_id() == 0) { "
                f'asm volatile("{op} [%0, {vec}], [%{1 + r}];\\n" :: '
                f'{_map_operand(a["dst"])}, {", ".join(cops)}, '
                f'"r"(exo_smem_u32({a["src"]})) : "memory"); }}')
    return gen


def multicast_check(ncta: int, cta_stride: int) -> TensorMapCopy:
    return TensorMapCopy("src", "dst", slices=ncta, cta_stride=cta_stride)


_LOAD = dict(timeline=tma_to_smem_async_instr, unit=cuda_warp, barrier=CudaMbarrier,
             includes=(HELPERS_KEY,), checks=(LOAD_CHECK,))
_STORE = dict(timeline=tma_to_gmem_async_instr, unit=cuda_warp, includes=(HELPERS_KEY,),
              checks=(STORE_CHECK,))
_TM = Sm90_tensorMapAny
_SM = CudaBasicSmem


# ------------------------------------------------------------------ loads
def load_1d(T):
    @instr(codegen=load_codegen(1, T), **_LOAD)
    def tma_load(n0: size, dst: [T][n0] @ _SM, src: [T][n0] @ _TM):
        assert stride(dst, 0) == 1
        for i0 in seq(0, n0):
            dst[i0] = src[i0]
    return tma_load


def load_2d(T):
    @instr(codegen=load_codegen(2, T), **_LOAD)
    def tma_load(n0: size, n1: size, dst: [T][n0, n1] @ _SM, src: [T][n0, n1] @ _TM):
        assert stride(dst, 1) == 1
        assert stride(dst, 0) == n1
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                dst[i0, i1] = src[i0, i1]
    return tma_load


def load_3d(T):
    @instr(codegen=load_codegen(3, T), **_LOAD)
    def tma_load(n0: size, n1: size, n2: size, dst: [T][n0, n1, n2] @ _SM,
                 src: [T][n0, n1, n2] @ _TM):
        assert stride(dst, 2) == 1
        assert stride(dst, 1) == n2
        assert stride(dst, 0) == n1 * n2
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                for i2 in seq(0, n2):
                    dst[i0, i1, i2] = src[i0, i1, i2]
    return tma_load


def load_4d(T):
    @instr(codegen=load_codegen(4, T), **_LOAD)
    def tma_load(n0: size, n1: size, n2: size, n3: size, dst: [T][n0, n1, n2, n3] @ _SM,
                 src: [T][n0, n1, n2, n3] @ _TM):
        assert stride(dst, 3) == 1
        assert stride(dst, 2) == n3
        assert stride(dst, 1) == n2 * n3
        assert stride(dst, 0) == n1 * n2 * n3
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                for i2 in seq(0, n2):
                    for i3 in seq(0, n3):
                        dst[i0, i1, i2, i3] = src[i0, i1, i2, i3]
    return tma_load


def load_5d(T):
    @instr(codegen=load_codegen(5, T), **_LOAD)
    def tma_load(n0: size, n1: size, n2: size, n3: size, n4: size,
                 dst: [T][n0, n1, n2, n3, n4] @ _SM, src: [T][n0, n1, n2, n3, n4] @ _TM):
        assert stride(dst, 4) == 1
        assert stride(dst, 3) == n4
        assert stride(dst, 2) == n3 * n4
        assert stride(dst, 1) == n2 * n3 * n4
        assert stride(dst, 0) == n1 * n2 * n3 * n4
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                for i2 in seq(0, n2):
                    for i3 in seq(0, n3):
                        for i4 in seq(0, n4):
                            dst[i0, i1, i2, i3, i4] = src[i0, i1, i2, i3, i4]
    return tma_load


# ------------------------------------------------------------------ multicast loads
def _mc_unit(ncta: int, cta_stride: int):
    base = cuda_warp_in_cluster if cta_stride == 1 else cuda_warp_in_cluster_strided(cta_stride)
    return ncta * base


def multicast_1d(T, C: int, S: int = 1):
    @instr(codegen=multicast_codegen(1, T, C, S), distributed={"dst": (cuda_cta_in_cluster,)},
           **dict(_LOAD, unit=_mc_unit(C, S), checks=(multicast_check(C, S),)))
    def tma_multicast(n0: size, dst: [T][C, n0] @ _SM, src: [T][n0] @ _TM):
        assert n0 % C == 0
        assert stride(dst, 1) == 1
        for c in seq(0, C):
            for i0 in seq(0, n0):
                dst[c, i0] = src[i0]
    return tma_multicast


def multicast_2d(T, C: int, S: int = 1):
    @instr(codegen=multicast_codegen(2, T, C, S), distributed={"dst": (cuda_cta_in_cluster,)},
           **dict(_LOAD, unit=_mc_unit(C, S), checks=(multicast_check(C, S),)))
    def tma_multicast(n0: size, n1: size, dst: [T][C, n0, n1] @ _SM, src: [T][n0, n1] @ _TM):
        assert n0 % C == 0
        assert stride(dst, 2) == 1
        assert stride(dst, 1) == n1
        for c in seq(0, C):
            for i0 in seq(0, n0):
                for i1 in seq(0, n1):
                    dst[c, i0, i1] = src[i0, i1]
    return tma_multicast


def multicast_3d(T, C: int, S: int = 1):
    @instr(codegen=multicast_codegen(3, T, C, S), distributed={"dst": (cuda_cta_in_cluster,)},
           **dict(_LOAD, unit=_mc_unit(C, S), checks=(multicast_check(C, S),)))
    def tma_multicast(n0: size, n1: size, n2: size, dst: [T][C, n0, n1, n2] @ _SM,
                      src: [T][n0, n1, n2] @ _TM):
        assert n0 % C == 0
        assert stride(dst, 3) == 1
        assert stride(dst, 2) == n2
        assert stride(dst, 1) == n1 * n2
        for c in seq(0, C):
            for i0 in seq(0, n0):
                for i1 in seq(0, n1):
                    for i2 in seq(0, n2):
                        dst[c, i0, i1, i2] = src[i0, i1, i2]
    return tma_multicast


# ------------------------------------------------------------------ stores and reduce-adds
def store_1d(T, reduce: bool):
    if reduce:
        @instr(codegen=store_codegen(1, True), atomic=("dst",), **_STORE)
        def tma_reduce_add(n0: size, dst: [T][n0] @ _TM, src: [T][n0] @ _SM):
            assert stride(src, 0) == 1
            for i0 in seq(0, n0):
                dst[i0] += src[i0]
        return tma_reduce_add

    @instr(codegen=store_codegen(1, False), **_STORE)
    def tma_store(n0: size, dst: [T][n0] @ _TM, src: [T][n0] @ _SM):
        assert stride(src, 0) == 1
        for i0 in seq(0, n0):
            dst[i0] = src[i0]
    return tma_store


def store_2d(T, reduce: bool):
    if reduce:
        @instr(codegen=store_codegen(2, True), atomic=("dst",), **_STORE)
        def tma_reduce_add(n0: size, n1: size, dst: [T][n0, n1] @ _TM, src: [T][n0, n1] @ _SM):
            assert stride(src, 1) == 1
            assert stride(src, 0) == n1
            for i0 in seq(0, n0):
                for i1 in seq(0, n1):
                    dst[i0, i1] += src[i0, i1]
        return tma_reduce_add

    @instr(codegen=store_codegen(2, False), **_STORE)
    def tma_store(n0: size, n1: size, dst: [T][n0, n1] @ _TM, src: [T][n0, n1] @ _SM):
        assert stride(src, 1) == 1
        assert stride(src, 0) == n1
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                dst[i0, i1] = src[i0, i1]
    return tma_store


def store_3d(T, reduce: bool):
    if reduce:
        @instr(codegen=store_codegen(3, True), atomic=("dst",), **_STORE)
        def tma_reduce_add(n0: size, n1: size, n2: size, dst: [T][n0, n1, n2] @ _TM,
                           src: [T][n0, n1, n2] @ _SM):
            assert stride(src, 2) == 1
            assert stride(src, 1) == n2
            assert stride(src, 0) == n1 * n2
            for i0 in seq(0, n0):
                for i1 in seq(0, n1):
                    for i2 in seq(0, n2):
                        dst[i0, i1, i2] += src[i0, i1, i2]
        return tma_reduce_add

    @instr(codegen=store_codegen(3, False), **_STORE)
    def tma_store(n0: size, n1: size, n2: size, dst: [T][n0, n1, n2] @ _TM,
                  src: [T][n0, n1, n2] @ _SM):
        assert stride(src, 2) == 1
        assert stride(src, 1) == n2
        assert stride(src, 0) == n1 * n2
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                for i2 in seq(0, n2):
                    dst[i0, i1, i2] = src[i0, i1, i2]
    return tma_store


def store_4d(T, reduce: bool):
    if reduce:
        @instr(codegen=store_codegen(4, True), atomic=("dst",), **_STORE)
        def tma_reduce_add(n0: size, n1: size, n2: size, n3: size,
                           dst: [T][n0, n1, n2, n3] @ _TM, src: [T][n0, n1, n2, n3] @ _SM):
            assert stride(src, 3) == 1
            assert stride(src, 2) == n3
            assert stride(src, 1) == n2 * n3
            assert stride(src, 0) == n1 * n2 * n3
            for i0 in seq(0, n0):
                for i1 in seq(0, n1):
                    for i2 in seq(0, n2):
                        for i3 in seq(0, n3):
                            dst[i0, i1, i2, i3] += src[i0, i1, i2, i3]
        return tma_reduce_add

    @instr(codegen=store_codegen(4, False), **_STORE)
    def tma_store(n0: size, n1: size, n2: size, n3: size, dst: [T][n0, n1, n2, n3] @ _TM,
                  src: [T][n0, n1, n2, n3] @ _SM):
        assert stride(src, 3) == 1
        assert stride(src, 2) == n3
        assert stride(src, 1) == n2 * n3
        assert stride(src, 0) == n1 * n2 * n3
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                for i2 in seq(0, n2):
                    for i3 in seq(0, n3):
                        dst[i0, i1, i2, i3] = src[i0, i1, i2, i3]
    return tma_store


def store_5d(T, reduce: bool):
    if reduce:
        @instr(codegen=store_codegen(5, True), atomic=("dst",), **_STORE)
        def tma_reduce_add(n0: size, n1: size, n2: size, n3: size, n4: size,
                           dst: [T][n0, n1, n2, n3, n4] @ _TM,
                           src: [T][n0, n1, n2, n3, n4] @ _SM):
            assert stride(src, 4) == 1
            assert stride(src, 3) == n4
            assert stride(src, 2) == n3 * n4
            assert stride(src, 1) == n2 * n3 * n4
            assert stride(src, 0) == n1 * n2 * n3 * n4
            for i0 in seq(0, n0):
                for i1 in seq(0, n1):
                    for i2 in seq(0, n2):
                        for i3 in seq(0, n3):
                            for i4 in seq(0, n4):
                                dst[i0, i1, i2, i3, i4] += src[i0, i1, i2, i3, i4]
        return tma_reduce_add

    @instr(codegen=store_codegen(5, False), **_STORE)
    def tma_store(n0: size, n1: size, n2: size, n3: size, n4: size,
                  dst: [T][n0, n1, n2, n3, n4] @ _TM, src: [T][n0, n1, n2, n3, n4] @ _SM):
        assert stride(src, 4) == 1
        assert stride(src, 3) == n4
        assert stride(src, 2) == n3 * n4
        assert stride(src, 1) == n2 * n3 * n4
        assert stride(src, 0) == n1 * n2 * n3 * n4
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                for i2 in seq(0, n2):
                    for i3 in seq(0, n3):
                        for i4 in seq(0, n4):
                            dst[i0, i1, i2, i3, i4] = src[i0, i1, i2, i3, i4]
    return tma_store


LOADS = {1: load_1d, 2: load_2d, 3: load_3d, 4: load_4d, 5: load_5d}
MULTICASTS = {1: multicast_1d, 2: multicast_2d, 3: multicast_3d}
STORES = {1: store_1d, 2: store_2d, 3: store_3d, 4: store_4d, 5: store_5d}
