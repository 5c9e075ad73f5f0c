"""Source locations carried by every IR node."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SrcInfo:
    """File, 1-based line and 0-based column of a construct.

    ``text`` optionally holds the source line itself, for programs parsed from strings
    (where ``linecache`` cannot find the file).
    """

    file: str
    line: int
    col: int = 0
    text: str | None = field(default=None, compare=False, repr=False)
    #: for a statement made by a scheduling rewrite: which step made it (``"step 18:
    #: stage_mem"``); the location is then the spec statement it came from
    via: str | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


NO_SRC = SrcInfo("<generated>", 0, 0)
