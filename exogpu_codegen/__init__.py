"""exogpu_codegen: verified GPU IR -> CUDA C++ -> nvcc -> runtime.

Not implemented yet (see the project's open issue on code generation): this package holds
no API so far, and the `exogpu-codegen` / `exogpu-bench` commands are not installed until it
does.
"""
