"""Kernels built by the tool's own schedules (the top layer: users of ``exogpu_verify``, like
the specs that apply them). ``gemm``: the GEMM library's schedule from the naive matmul."""
