"""Kernel names in ptxas reports and SASS listings: the ``exo_kernel<k>_<proc>`` component of
an Itanium-mangled nested name."""

from __future__ import annotations

import re


def demangle(name: str) -> str:
    """The ``exo_kernel<k>_<proc>`` component of an Itanium-mangled nested name
    (``_ZN<len><namespace><len><kernel>E...``), or the name itself."""
    if name.startswith("_ZN"):
        i = 3
        while i < len(name) and name[i].isdigit():
            j = i
            while name[j].isdigit():
                j += 1
            n = int(name[i:j])
            part = name[j:j + n]
            if part.startswith("exo_kernel"):
                return part
            i = j + n
    m = re.search(r"(exo_kernel\d+_\w+)", name)
    return m.group(1) if m else name
