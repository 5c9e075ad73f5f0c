"""C++ text every generated file starts with: includes, the platform helpers, and the small
runtime the generated code calls (floor division, swizzled addressing, mbarrier primitives,
tensor-map encoding through the runtime's driver entry point, launch helpers, and the
``exo_rt_*`` functions the Python runtime uses for device memory without CuPy)."""

from __future__ import annotations

from exogpu_verify.platforms._ptx import HELPERS

INCLUDES = """#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
"""

DEVICE_RUNTIME = r"""
template <class T> __host__ __device__ __forceinline__ T exo_max0(T x) { return x > 0 ? x : T(0); }
// floor division / modulo by a positive constant (the language's `/` and `%` on control values)
__host__ __device__ __forceinline__ int exo_fdiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
__host__ __device__ __forceinline__ int exo_fmod(int a, int b) { int r = a % b; return r < 0 ? r + b : r; }
__host__ __device__ __forceinline__ int64_t exo_fdiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
__host__ __device__ __forceinline__ int64_t exo_fmod(int64_t a, int64_t b) { int64_t r = a % b; return r < 0 ? r + b : r; }

// Element of swizzled shared memory: the B-byte swizzle XORs address bits [4, 4+log2(B/16))
// with bits [7, ...) (PTX ISA, tensor map swizzle modes), computed on the shared address so it
// agrees with TMA and wgmma for tiles aligned to the swizzle period.
template <int B, class T> __device__ __forceinline__ T& exo_swz(T* p) {
  const uint32_t a = exo_smem_u32(p);
  constexpr uint32_t mask = (B == 128 ? 7u : B == 64 ? 3u : 1u);
  const uint32_t s = a ^ (((a >> 7) & mask) << 4);
  return *reinterpret_cast<T*>(reinterpret_cast<char*>(p) + (int32_t(s) - int32_t(a)));
}
template <int A> __device__ __forceinline__ char* exo_align_smem(char* p) {
  const uint32_t a = exo_smem_u32(p);
  return p + ((A - (a & (A - 1))) & (A - 1));
}

__device__ __forceinline__ void exo_mbar_init(uint32_t addr, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(addr), "r"(count) : "memory");
}
__device__ __forceinline__ void exo_mbar_arrive(uint32_t addr) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(addr) : "memory");
}
__device__ __forceinline__ void exo_mbar_arrive_cp_async(uint32_t addr) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(addr) : "memory");
}
// arrive on the mbarrier at the same offset in CTA `rank` of the cluster
__device__ __forceinline__ void exo_mbar_arrive_cluster(uint32_t addr, uint32_t rank) {
  asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
               "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n"
               :: "r"(addr), "r"(rank) : "memory");
}
__device__ __forceinline__ void exo_mbar_wait(uint32_t addr, uint32_t parity) {
  uint32_t done = 0;
  do {
#if __CUDA_ARCH__ >= 900
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(addr), "r"(parity) : "memory");
#else
    asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(addr), "r"(parity) : "memory");
#endif
  } while (!done);
}
// the wait of an mbarrier that other CTAs of the cluster arrive on: their arrives are
// release.cluster, and a release synchronizes only with an acquire whose scope includes the
// releasing thread (PTX ISA, memory consistency model: morally strong), so the wait is
// acquire.cluster (the default, acquire.cta, would not make their earlier writes visible)
__device__ __forceinline__ void exo_mbar_wait_cluster(uint32_t addr, uint32_t parity) {
  uint32_t done = 0;
  do {
#if __CUDA_ARCH__ >= 900
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(addr), "r"(parity) : "memory");
#else  // no clusters before sm_90: never called there
    exo_mbar_wait(addr, parity);
    done = 1;
#endif
  } while (!done);
}
// a wgmma accumulator array as an asm operand: an empty asm that reads and writes every
// register, so the compiler keeps the array's reads and writes on their side of the
// wgmma.wait_group or wgmma.fence it follows or precedes (the wait's and the fence's asm
// touch memory only, and accumulator registers are no memory: PTX ISA, wgmma, accessing
// them before the wait is undefined behaviour)
template <int N>
__device__ __forceinline__ void exo_fence_acc(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}
"""

HOST_RUNTIME = r"""
#define EXO_TRY(x) do { const int exo_e = int(x); if (exo_e != 0) return exo_e; } while (0)
enum { EXO_ERR_TMAP_STRIDE = 100001, EXO_ERR_TMAP_DRIVER = 100002, EXO_ERR_TMAP_BASE = 200000 };

// cuTensorMapEncodeTiled through the runtime's driver entry point: no -lcuda needed
[[maybe_unused]] static int exo_encode_tmap(CUtensorMap* m, CUtensorMapDataType dt, int rank, void* base,
                           const int64_t* dims, const int64_t* strides, const int* box,
                           int elem_bytes, CUtensorMapSwizzle swz) {
  using Fn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                          const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
                          CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                          CUtensorMapFloatOOBfill);
  static Fn fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess || !p)
#else
    if (cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &q) != cudaSuccess || !p)
#endif
      return EXO_ERR_TMAP_DRIVER;
    fn = reinterpret_cast<Fn>(p);
  }
  cuuint64_t gdim[5], gstride[4];
  cuuint32_t bdim[5], estride[5];
  if (strides[rank - 1] != 1) return EXO_ERR_TMAP_STRIDE;
  for (int d = 0; d < rank; ++d) {  // the driver wants the innermost dimension first
    gdim[d] = cuuint64_t(dims[rank - 1 - d]);
    bdim[d] = cuuint32_t(box[rank - 1 - d]);
    estride[d] = 1;
    if (d > 0) gstride[d - 1] = cuuint64_t(strides[rank - 1 - d]) * cuuint64_t(elem_bytes);
  }
  const CUresult r = fn(m, dt, cuuint32_t(rank), base, gdim, gstride, bdim, estride,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : EXO_ERR_TMAP_BASE + int(r);
}

// A tensor map encoded once per distinct (base, dims, strides) of one window statement and
// host thread: launches with unchanged arguments reuse it (the box, element type and swizzle
// are constants of the statement). `encode` fills the map and returns 0 or an error code.
struct exo_TmapCache {
  CUtensorMap map;
  void* base;
  int64_t dims[5];
  int64_t strides[5];
  bool valid;
};
template <class Encode>
[[maybe_unused]] static int exo_tmap_cached(exo_TmapCache* c, int rank, void* base,
                                            const int64_t* dims, const int64_t* strides,
                                            Encode&& encode) {
  if (c->valid && c->base == base &&
      std::memcmp(c->dims, dims, sizeof(int64_t) * size_t(rank)) == 0 &&
      std::memcmp(c->strides, strides, sizeof(int64_t) * size_t(rank)) == 0)
    return 0;
  c->valid = false;
  EXO_TRY(encode(&c->map));
  c->base = base;
  std::memcpy(c->dims, dims, sizeof(int64_t) * size_t(rank));
  std::memcpy(c->strides, strides, sizeof(int64_t) * size_t(rank));
  c->valid = true;
  return 0;
}

// the current device, and its SM count read once per device and host thread
[[maybe_unused]] static int exo_num_sms(int* dev_out) {
  static thread_local int cache[64] = {};
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  *dev_out = dev;
  if (dev < 64 && cache[dev] > 0) return cache[dev];
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
  if (dev < 64) cache[dev] = n;
  return n;
}

// at most this many CTAs per launch when > 0 (exo_rt_set_grid_limit): fewer CTAs run more
// tasks each, so small problems reuse barriers and ring phases across tasks
static int64_t exo_grid_limit = 0;
"""

RT_EXPORTS = r"""
// ---------------------------------------------------------------- runtime helpers (Python side)
extern "C" int exo_rt_device_count(int* n) { *n = 0; return int(cudaGetDeviceCount(n)); }
extern "C" int exo_rt_capability(int* major, int* minor) {
  int dev = 0;
  EXO_TRY(cudaGetDevice(&dev));
  EXO_TRY(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev));
  return int(cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, dev));
}
extern "C" int exo_rt_malloc(void** p, size_t n) { return int(cudaMalloc(p, n ? n : 1)); }
extern "C" int exo_rt_free(void* p) { return int(cudaFree(p)); }
extern "C" int exo_rt_memcpy(void* dst, const void* src, size_t n, int kind) {
  return int(cudaMemcpy(dst, src, n, kind == 1 ? cudaMemcpyHostToDevice :
                        kind == 2 ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice));
}
extern "C" void exo_rt_set_grid_limit(int64_t ctas) { exo_grid_limit = ctas > 0 ? ctas : 0; }
extern "C" int exo_rt_sync(void* stream) {
  return int(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}
extern "C" const char* exo_rt_error_string(int e) {
  if (e == EXO_ERR_TMAP_STRIDE) return "a tensor map needs its innermost stride to be 1";
  if (e == EXO_ERR_TMAP_DRIVER) return "cuTensorMapEncodeTiled is not available from the driver";
  if (e >= EXO_ERR_TMAP_BASE) return "cuTensorMapEncodeTiled rejected the tensor map (sizes, "
                                     "strides or alignment: strides must be multiples of 16 bytes)";
  return cudaGetErrorString(static_cast<cudaError_t>(e));
}
"""


def prelude() -> str:
    return INCLUDES + HELPERS + DEVICE_RUNTIME + HOST_RUNTIME
