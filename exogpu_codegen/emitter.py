"""A tiny indented-line writer shared by the device and host emitters."""

from __future__ import annotations


class Lines:
    def __init__(self):
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, text: str = "") -> None:
        for ln in text.split("\n"):
            self.lines.append(("  " * self.depth + ln) if ln else "")

    def open(self, head: str) -> None:
        self(head + " {")
        self.depth += 1

    def close(self, tail: str = "}") -> None:
        self.depth -= 1
        self(tail)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
