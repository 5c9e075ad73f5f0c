"""Instruction and memory libraries: ``cuda``, ``sm80``, ``sm90``.

Each instruction is one ``@instr`` procedure: its body is the sequential meaning, its
parameters carry types and memories, and its ``InstrInfo`` carries the collective unit, the
instruction timeline, the completion mechanism and the C++/PTX lowering. Families (ranks,
types, N of wgmma) are built by Python functions and renamed per member.

Codegen convention (what ``InstrInfo.codegen`` receives)
--------------------------------------------------------
``codegen`` is a ``str.format`` template or a callable ``(args: dict) -> str`` returning one
C++ statement (possibly a ``{ ... }`` block). ``args`` maps:

* each size/index parameter name -> its value: a Python ``int`` when constant (instructions
  whose PTX needs immediates require constants), else a C++ integer expression;
* each data parameter name -> a C++ *pointer* expression to the window's first element, as
  seen by the executing thread (for a parameter declared ``distributed``, the first element
  of the executing thread's / CTA's shard; its non-distributed dimensions are contiguous in
  C order, so ``p[i]`` is the i-th register of a fragment);
* ``f"{p}_stride{d}"`` -> the element stride of dimension ``d`` of window ``p`` (C++ integer
  expression), for every data parameter and dimension;
* for a tensor-map window ``p`` (``Sm90_tensorMap``): ``args[p]`` is an lvalue of the
  ``CUtensorMap`` (the template takes its address), ``f"{p}_coords"`` a list of C++ integer
  expressions, the window's start coordinate in *every* dimension of the underlying tensor,
  outermost first, and optionally ``f"{p}_dims"``, the tensor dimensions of the window's
  interval dimensions (default: all);
* ``"_mbar"`` -> for an instruction with ``barrier=CudaMbarrier``, the ``uint32_t``
  shared-space address of the executing CTA's mbarrier slot named by ``>> z[...]``;
* ``f"{p}_scale_d"`` -> for ``p`` in ``Sm90_RmemMatrixD``, an lvalue ``int``: the tile's
  lazy-zero flag (see ``_wgmma``).

``InstrInfo.includes`` lists keys of ``_ptx.INCLUDES`` (C++ helper text such as
``exo_smem_u32``, ``exo_wgmma_desc``); ``_ptx.cpp_prelude(instrs)`` assembles them. The PTX that
synchronization statements lower to is ``_ptx.SYNC_PTX``. Host instructions use the stream
``exo_cudaStream``.
"""

from ._ptx import INCLUDES, SYNC_PTX, cpp_prelude  # noqa: F401
