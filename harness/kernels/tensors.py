"""Converting between logical NumPy tensors and their memory images (channels last, channel pitch
rounded up to even, FP16), and describing each tensor of a kernel step."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.kernels.spec import KernelSpec, cp


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple       # logical shape
    rows: int          # memory image: rows x pitch halves
    pitch: int
    cols: int          # valid columns of a row (the rest is the zero pad)

    @property
    def halves(self) -> int:
        return self.rows * self.pitch

    @property
    def nbytes(self) -> int:
        return 2 * self.halves


def info(name: str, shape: tuple) -> TensorInfo:
    """Memory layout of a logical tensor: the last axis is the row, padded to even; the others flatten."""
    cols = shape[-1]
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    return TensorInfo(name=name, shape=tuple(shape), rows=rows, pitch=cp(cols), cols=cols)


def to_image(a: np.ndarray) -> np.ndarray:
    """Logical FP16 array -> uint16 memory image (rows x pitch)."""
    a16 = np.asarray(a, dtype=np.float16)
    t = info("_", a16.shape)
    img = np.zeros((t.rows, t.pitch), dtype=np.uint16)
    img[:, : t.cols] = a16.reshape(t.rows, t.cols).view(np.uint16)
    return img


def from_image(raw: bytes, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """uint16 memory image bytes -> (logical float16 array, pad column values)."""
    t = info("_", shape)
    img = np.frombuffer(raw, dtype=np.uint16, count=t.halves).reshape(t.rows, t.pitch)
    vals = img[:, : t.cols].copy().view(np.float16).reshape(shape)
    pad = img[:, t.cols:]
    return vals, pad


def weight_shape(spec: KernelSpec, k_in: int, k_out: int) -> tuple:
    """Logical shape of a weight (or weight-gradient) tensor with the given channel counts.
    conv weights flatten (k, k, C_in) into one row so that rows are contiguous for the matmul."""
    if spec.kind == "dw":
        return (spec.k, spec.k, k_in)
    if spec.kind == "conv":
        return (k_out, spec.k * spec.k * k_in)
    return (k_out, k_in)


def logical_to_storage(spec: KernelSpec, name: str, a: np.ndarray) -> np.ndarray:
    """Reshape reference tensors to the storage shapes used in memory (conv weights flattened)."""
    if spec.kind == "conv" and name in ("w", "dw"):
        return a.reshape(a.shape[0], -1)
    return a
