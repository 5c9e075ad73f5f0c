"""Instruction preconditions (kind ``instruction``) of TMA and wgmma, at the call, for all
sizes: box vs copied tile, swizzle and element type of the tensor map vs the SMEM tile, SMEM
alignment (128 bytes, a swizzle atom when swizzled), transaction bytes, tensor-map encoding
limits, stride asserts, wgmma descriptor operands (memory, majorness, start address).

Each family: the example, variants, the correct twin (``proven`` and ``checked``)."""

from __future__ import annotations

from pre_helpers import accepted_both, parse, refuted_both

from exogpu_verify import verify

TMA = '''
@proc
def k(M: size, A: bf16[M, 64] @ CudaGmemLinear, C: bf16[M, 64] @ CudaGmemLinear):
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap({sw}, {box})  # <- map
    with CudaDeviceFunction(blockDim=128):
        for m in cuda_tasks(0, M / 64):
            sA: bf16[{rows}, {cols}] @ {mem}
            raw: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
            with CudaWarps(0, 1):
                tma_load(64, 64, sA[{r0}:{r0} + 64, 0:64], tA[m * 64:m * 64 + 64, :]) >> raw[0]  # <- call
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    Arrive(cuda_temporal) >> raw[0]
            Await(raw[0], cuda_in_order, 0)
            for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                for c in cuda_threads(0, 2, unit=cuda_thread):
                    for j in seq(0, 32):
                        C[m * 64 + r, c * 32 + j] = sA[{r0} + r, c * 32 + j]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
'''

GOOD = dict(sw=128, box="64, 64", rows=64, cols=64, mem="Sm90_SmemSwizzled(128)", r0=0)


def tma(mark: str, **kw):
    """The TMA kernel with ``kw`` changed, marked at the line ``mark`` names."""
    src = TMA.format(**{**GOOD, **kw})
    lines = []
    for ln in src.splitlines():
        if ln.rstrip().endswith(f"# <- {mark}"):
            ln = ln.replace(f"# <- {mark}", "# <-")
        elif "# <- " in ln:
            ln = ln[:ln.index("# <- ")].rstrip()
        lines.append(ln)
    return "\n".join(lines)


def test_tma_correct_twin_is_proven():
    accepted_both(tma("call"), {"M": 128})


def test_tma_box_differs_from_the_copied_tile():
    d = refuted_both(tma("call", box="32, 64"), "instruction", {"M": 128},
                     "the box [32, 64] differs from the tile this call copies, [64, 64]",
                     static=True)
    assert "tA" in d.message


def test_tma_swizzle_of_the_map_differs_from_the_smem_tile():
    refuted_both(tma("call", sw=0), "instruction", {"M": 128}, "the tensor map's swizzle is 0 "
                 "but the SMEM tile 'sA' is in Sm90_SmemSwizzled(128)", static=True)
    refuted_both(tma("call", mem="CudaSmemLinear"), "instruction", {"M": 128},
                 "swizzle is 128 but the SMEM tile", static=True)


def test_tma_swizzle_0_with_linear_smem_is_proven():
    accepted_both(tma("call", sw=0, mem="CudaSmemLinear"), {"M": 64})


def test_tma_smem_tile_not_on_a_swizzle_atom():
    # rows 4..67 of a 72-row tile: 4 * 128 = 512 bytes into the 1024-byte atom
    refuted_both(tma("call", rows=72, r0=4), "instruction", {"M": 64},
                 "must start 1024-byte aligned (one swizzle atom)", static=True)
    # 8 rows in: exactly one atom, so aligned
    accepted_both(tma("call", rows=72, r0=8), {"M": 64})


def test_tma_linear_smem_needs_128_byte_alignment_only():
    # 1 row of 128 bytes in: fine without a swizzle
    accepted_both(tma("call", sw=0, mem="CudaSmemLinear", rows=72, r0=1), {"M": 64})


def test_tma_stride_assert_violated_by_a_padded_tile():
    # rows of 128 elements: stride(dst, 0) == n1 (64) fails
    d = refuted_both(tma("call", cols=128, mem="CudaSmemLinear", sw=0), "instruction",
                     {"M": 64}, "precondition `assert stride(dst, 0) == n1` of "
                     "tma_load_2d_bf16() does not hold", static=True)
    assert "stride(dst, 0) = 128" in d.message and "n1 = 64" in d.message


def test_tensor_map_encoding_limits():
    refuted_both(tma("map", box="64, 128"), "instruction", None,
                 "inner box dimension is 256 bytes, more than the 128-byte swizzle span",
                 static=True)
    refuted_both(tma("map", sw=0, mem="CudaSmemLinear", box="512, 64"), "instruction", None,
                 "box extent 512 (dimension 0) is outside [1, 256]", static=True)
    refuted_both(tma("map", sw=0, mem="CudaSmemLinear", box="64, 4"), "instruction", None,
                 "inner box dimension is 4 x 2 = 8 bytes, not a multiple of 16", static=True)


GLOBAL_STRIDE = '''
@proc
def k(M: size, K: size, A: bf16[M, K] @ CudaGmemLinear):
    assert M % 64 == 0
    assert K % {k} == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 64, 8)  # <-
    with CudaDeviceFunction(blockDim=128):
        for m in cuda_tasks(0, M / 64):
            sA: bf16[64, 8] @ CudaSmemLinear
            raw: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
            with CudaWarps(0, 1):
                tma_load(64, 8, sA[:, :], tA[m * 64:m * 64 + 64, 0:8]) >> raw[0]
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    Arrive(cuda_temporal) >> raw[0]
            Await(raw[0], cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
'''


def test_tensor_map_global_stride_must_be_a_multiple_of_16_bytes_for_all_sizes():
    # rows of K bf16: 2K bytes, a multiple of 16 only if K % 8 == 0
    refuted_both(GLOBAL_STRIDE.format(k=4), "instruction", {"M": 64, "K": 12},
                 "the global stride of A's dimension 0 is 2 * K bytes", static=False)
    accepted_both(GLOBAL_STRIDE.format(k=8), {"M": 64, "K": 16})


RING = '''
@proc
def k(K: size, A: bf16[K, 64, 64] @ CudaGmemLinear, C: bf16[K, 64, 64] @ CudaGmemLinear):
    tA = A[:, :, :] @ Sm90_tensorMap(128, 1, 64, 64)
    with CudaDeviceFunction(blockDim=128):
        for t in cuda_tasks(0, 1):
            sA: bf16[2, {rows}, 64] @ Sm90_SmemSwizzled(128)
            raw: barrier[K @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, K):
                with CudaWarps(0, 1):
                    tma_load(64, 64, sA[k % 2, 0:64, :], tA[k, :, :]) >> raw[k]  # <-
                    for t1 in cuda_threads(0, 1, unit=cuda_thread):
                        Arrive(cuda_temporal) >> raw[k]
                Await(raw[k], cuda_in_order, 0)
                for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                    for c in cuda_threads(0, 2, unit=cuda_thread):
                        for j in seq(0, 32):
                            C[k, r, c * 32 + j] = sA[k % 2, r, c * 32 + j]
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
'''


def test_tma_alignment_that_depends_on_the_ring_slot_is_checked_for_all_iterations():
    # slots of 68 rows (8704 bytes): slot 1 starts 512 bytes into a swizzle atom
    d = refuted_both(RING.format(rows=68), "instruction", {"K": 2}, "must start 1024-byte "
                     "aligned", static=False)
    assert "k=1" in d.message or "k = 1" in d.message
    p = parse(RING.format(rows=68))
    assert verify(p, sizes={"K": 1}).verdict == "checked"  # one slot only: aligned
    assert verify(p).sizes == {"K": 2}


def test_tma_ring_of_whole_atoms_is_proven():
    accepted_both(RING.format(rows=72), {"K": 3})


WGMMA = '''
@proc
def k(M: size, A: bf16[M, 64] @ CudaGmemLinear):
    assert M % 64 == 0
    with CudaDeviceFunction(blockDim=128):
        for m in cuda_tasks(0, M / 64):
            sA: bf16[{rows}, {cols}] @ {mem}
            sB: bf16[64, 64] @ Sm90_SmemSwizzled(128)
            for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                for c in cuda_threads(0, 2, unit=cuda_thread):
                    for j in seq(0, 32):
                        sA[r, {col}] = A[m * 64 + r, c * 32 + j]
                        sB[r, c * 32 + j] = A[m * 64 + r, c * 32 + j]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
            D: f32[4, 32, 8, 2, 2] @ Sm90_RmemMatrixD
            cg: barrier @ Sm90_WgmmaCommitGroup
            for wg in cuda_threads(0, 1, unit=cuda_warpgroup):
                wgmma_zero(D[:, :, :, :, :])
                Fence(wgmma_fence_1, wgmma_fence_2)
                for kk in seq(0, 4):
                    wgmma(D[:, :, :, :, :], {a_win}, sB[:, kk * 16:kk * 16 + 16])  # <-
                Arrive(wgmma_async) >> cg
                Await(cg, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
'''

WG_GOOD = dict(rows=64, cols=64, mem="Sm90_SmemSwizzled(128)", col="c * 32 + j",
               a_win="sA[0:64, kk * 16:kk * 16 + 16]")


def wgmma_src(**kw):
    return WGMMA.format(**{**WG_GOOD, **kw})


def test_wgmma_correct_twin_is_proven():
    accepted_both(wgmma_src(), {"M": 64})


def test_wgmma_operand_not_in_the_first_row_of_a_swizzle_atom():
    # rows 4..67: the descriptor's base offset 0 assumes the tile starts on an atom row 0
    refuted_both(wgmma_src(rows=72, col="c * 32 + j", a_win="sA[4:68, kk * 16:kk * 16 + 16]"),
                 "instruction", {"M": 64}, "operand 'A' of wgmma_m64n64k16_f32_bf16_ss(): the "
                 "matrix descriptor (base offset 0) needs the tile to start", static=False)


def test_wgmma_operand_must_start_16_byte_aligned():
    # a K slice starting 4 elements (8 bytes) in: the descriptor drops the low 4 bits
    refuted_both(wgmma_src(a_win="sA[0:64, kk * 8 + 4:kk * 8 + 20]"), "instruction",
                 {"M": 64}, "start 16-byte aligned in the first row", static=True)


def test_wgmma_operand_whose_last_dimension_is_not_contiguous():
    # a [64, 16] window whose K dimension has stride 4: not the K-major layout the
    # descriptor says
    src = '''
    @proc
    def k(M: size, A: bf16[M, 64] @ CudaGmemLinear):
        assert M % 64 == 0
        with CudaDeviceFunction(blockDim=128):
            for m in cuda_tasks(0, M / 64):
                sA: bf16[64, 16, 4] @ Sm90_SmemSwizzled(128)
                sB: bf16[64, 64] @ Sm90_SmemSwizzled(128)
                for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                    for c in cuda_threads(0, 2, unit=cuda_thread):
                        for j in seq(0, 32):
                            sA[r, (c * 32 + j) / 4, j % 4] = A[m * 64 + r, c * 32 + j]
                            sB[r, c * 32 + j] = A[m * 64 + r, c * 32 + j]
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
                D: f32[4, 32, 8, 2, 2] @ Sm90_RmemMatrixD
                cg: barrier @ Sm90_WgmmaCommitGroup
                for wg in cuda_threads(0, 1, unit=cuda_warpgroup):
                    wgmma_zero(D[:, :, :, :, :])
                    Fence(wgmma_fence_1, wgmma_fence_2)
                    for kk in seq(0, 4):
                        wgmma(D[:, :, :, :, :], sA[:, :, kk], sB[:, kk * 16:kk * 16 + 16])  # <-
                    Arrive(wgmma_async) >> cg
                    Await(cg, cuda_in_order, 0)
                Fence(cuda_in_order, cuda_in_order)
    '''
    refuted_both(src, "instruction", {"M": 64}, "whose last dimension is contiguous, but the "
                 "window sA has stride 4 there", static=True)


MULTICAST = '''
@proc
def k(T: size, A: bf16[T, 64, 64] @ CudaGmemLinear, C: bf16[T, 2, 64, 64] @ CudaGmemLinear):
    tA = A[:, :, :] @ Sm90_tensorMap(128, 1, {box0}, 64)
    with CudaDeviceFunction(blockDim=128, clusterDim={cl}):
        for task in cuda_tasks(0, T):
            B: bf16[2, 64, 64] @ Sm90_SmemSwizzled(128)
            raw: barrier[2, 1 @ ring_buffer_by(1)] @ CudaMbarrier
            for w in cuda_threads(0, 1, unit=2 * cuda_warp_in_cluster):
                {mc}(64, 64, B[:, :, :], tA[task, :, :]) >> raw[:, 0]  # <-
                for wc in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                    Arrive(cuda_temporal) >> raw[:, 0]
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                Await(raw[cta, 0], cuda_in_order, 0)
                for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                    for c in cuda_threads(0, 2, unit=cuda_thread):
                        for j in seq(0, 32):
                            C[task, cta, r, c * 32 + j] = B[cta, r, c * 32 + j]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
'''


def multicast(box0=32, cl=2, mc="tma_mc2"):
    return MULTICAST.format(box0=box0, cl=cl, mc=mc)


def test_multicast_correct_twin_is_proven():
    # each CTA loads half of the 64 rows (box 32 x 64) and multicasts it to both
    accepted_both(multicast(), {"T": 2})


def test_multicast_box_must_be_the_per_cta_slice():
    # a box of the whole tile: each CTA would receive 2 x 8192 bytes for an expect_tx of 8192
    d = refuted_both(multicast(box0=64), "instruction", {"T": 1}, "the box [1, 64, 64] differs "
                     "from the tile this call copies, [1, (64) / 2, 64] (a multicast over 2 CTAs")
    p = parse(multicast(box0=64))
    from exogpu_verify.analysis import analyze

    msgs = [x.message for x in analyze(p).diagnostics]
    assert any("expects 8192 transaction bytes" in m and "receives 2 x 4096 x 2 = 16384" in m
               for m in msgs), msgs


def test_multicast_group_must_fit_the_cluster():
    # a user instruction declaring a multicast to 2 CTAs 2 ranks apart (a group of 4 ranks)
    # in a cluster of 2: the CTA mask would name CTAs outside the cluster
    from exogpu_verify import parse_proc_source
    from exogpu_verify.ir.checks import TensorMapCopy
    from exogpu_verify.platforms.sm90 import Sm90_tensorMapAny

    user = parse_proc_source('''
@instr(timeline=tma_to_smem_async_instr, unit=2 * cuda_warp_in_cluster, barrier=CudaMbarrier,
       distributed={"dst": (cuda_cta_in_cluster,)},
       checks=(TensorMapCopy("src", "dst", slices=2, cta_stride=2),))
def my_multicast(n0: size, n1: size, dst: [bf16][2, n0, n1] @ Sm90_SmemSwizzled(128),
                 src: [bf16][n0, n1] @ Sm90_tensorMapAny):
    for c in seq(0, 2):
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                dst[c, i0, i1] = src[i0, i1]
''', {"TensorMapCopy": TensorMapCopy, "Sm90_tensorMapAny": Sm90_tensorMapAny})
    refuted_both(multicast(mc="my_multicast"), "instruction", None, "multicasts to 2 CTAs 2 "
                 "apart (a group of 4 cluster ranks) but the cluster has 2 CTAs", static=True,
                 my_multicast=user)


CP_ASYNC = '''
@proc
def k(A: f32[32, 4] @ CudaGmemLinear, C: f32[32, 4] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            sm: f32[32, {cols}] @ CudaSmemLinear
            cg: barrier[32] @ Sm80_CommitGroup
            for t in cuda_threads(0, 32, unit=cuda_thread):
                cp_async(4, sm[t, 0:4], A[t, :])  # <-
                Arrive(Sm80_cp_async) >> cg[t]
                Await(cg[t], cuda_in_order, 0)
                for j in seq(0, 4):
                    C[t, j] = sm[t, j]
            Fence(cuda_in_order, cuda_in_order)
'''


def test_cp_async_smem_destination_aligned_to_the_copy():
    from exogpu_verify.platforms.sm80 import Sm80_cp_async_f32 as cp_async

    accepted_both(CP_ASYNC.format(cols=4), {}, cp_async=cp_async)
    # rows of 5 floats: thread 1 copies 16 bytes to byte 20
    d = refuted_both(CP_ASYNC.format(cols=5), "instruction", {}, "argument 'dst' of "
                     "Sm80_cp_async_f32() must start 16-byte aligned", static=False,
                     cp_async=cp_async)
    assert "t=1" in d.message
