"""Scalar and control types of the language, as value objects that print as the user spells them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class ScalarType:
    """A data precision (``f32``, ``bf16``, ...)."""

    name: str
    bits: int
    is_float: bool
    signed: bool = True

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    @property
    def np_dtype(self) -> np.dtype:
        if self.name == "bf16":
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(_NP_NAMES[self.name])

    @property
    def nbytes(self) -> int:
        return self.bits // 8

    # ``f32[N, M]`` in an annotation; evaluated only when users build types from Python.
    def __getitem__(self, shape):
        return ("tensor", self, shape if isinstance(shape, tuple) else (shape,))


_NP_NAMES = {
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "i8": "int8",
    "ui8": "uint8",
    "i16": "int16",
    "ui16": "uint16",
    "i32": "int32",
}

f16 = ScalarType("f16", 16, True)
bf16 = ScalarType("bf16", 16, True)
f32 = ScalarType("f32", 32, True)
f64 = ScalarType("f64", 64, True)
i8 = ScalarType("i8", 8, False, True)
ui8 = ScalarType("ui8", 8, False, False)
i16 = ScalarType("i16", 16, False, True)
ui16 = ScalarType("ui16", 16, False, False)
i32 = ScalarType("i32", 32, False, True)
#: type of a float literal in a data expression; takes the precision of its context
R = ScalarType("R", 64, True)

SCALAR_TYPES = {t.name: t for t in (f16, bf16, f32, f64, i8, ui8, i16, ui16, i32)}


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """The precision in which a binary data operation is computed.

    Floats beat integers; among floats the wider wins; f16 and bf16 together compute in f32
    (neither holds the other). ``R`` (a literal) takes the other side's precision.
    """
    if a == R:
        return b
    if b == R or a == b:
        return a
    if a.is_float and b.is_float:
        if {a.name, b.name} == {"f16", "bf16"}:
            return f32
        return a if a.bits >= b.bits else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    return a if a.bits >= b.bits else b


@dataclass(frozen=True, slots=True)
class ControlType:
    """``size`` (positive int parameter), ``index`` (int), ``bool``; ``int`` for literals."""

    name: str

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    @property
    def is_int(self) -> bool:
        return self.name in ("size", "index", "int", "stride")


size = ControlType("size")
index = ControlType("index")
bool_ = ControlType("bool")
int_ = ControlType("int")
stride_t = ControlType("stride")

CONTROL_TYPES = {"size": size, "index": index, "bool": bool_}


@dataclass(frozen=True, slots=True)
class BarrierType:
    """Type of a barrier variable (``barrier`` in source)."""

    def __str__(self) -> str:
        return "barrier"


barrier = BarrierType()


def is_control(t) -> bool:
    return isinstance(t, ControlType)


def is_data(t) -> bool:
    return isinstance(t, ScalarType)
