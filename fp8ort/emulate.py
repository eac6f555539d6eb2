"""Run a quantized fp8ort model without the native library: ``onnx.reference`` plus ``fp8ort.reference``.

Slow (NumPy, exact FP8 products), but it is the emulated route of the CPU reference semantics: tests and
numerics debugging use it where ``libfp8ort.so`` is not built.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

from . import reference as ref

DOMAIN = "com.fp8ort"


def _opt(args: tuple, i: int) -> Any:
    return args[i] if len(args) > i and args[i] is not None else None


class FP8Conv(OpRun):
    op_domain = DOMAIN

    def _run(
        self,
        *args: Any,
        strides=None,
        pads=None,
        dilations=None,
        group=None,
        activation=None,
        layout=None,
        output_dtype=None,
    ):
        y = ref.fp8_conv(
            *[_opt(args, i) for i in range(8)],
            strides=strides or (1, 1),
            pads=pads or (0, 0, 0, 0),
            dilations=dilations or (1, 1),
            group=group or 1,
            activation=activation or "",
            layout=layout or "NCHW",
            output_dtype=output_dtype or onnx.TensorProto.FLOAT,
        )
        return (y,)


class FP8MatMul(OpRun):
    op_domain = DOMAIN

    def _run(self, *args: Any, transB=None, activation=None, output_dtype=None):
        y = ref.fp8_matmul(
            *[_opt(args, i) for i in range(8)],
            transB=transB or 0,
            activation=activation or "",
            output_dtype=output_dtype or onnx.TensorProto.FLOAT,
        )
        return (y,)


class FP8Quantize(OpRun):
    op_domain = DOMAIN

    def _run(self, x, scale, output_dtype=None, saturate=None):
        return (
            ref.fp8_quantize(
                x,
                scale,
                output_dtype=output_dtype or onnx.TensorProto.FLOAT8E4M3FN,
                saturate=1 if saturate is None else saturate,
            ),
        )


class FP8Dequantize(OpRun):
    op_domain = DOMAIN

    def _run(self, x, scale, output_dtype=None):
        return (ref.fp8_dequantize(x, scale, output_dtype=output_dtype or onnx.TensorProto.FLOAT),)


def reference_session(model: onnx.ModelProto | ir.Model | str) -> ReferenceEvaluator:
    """An ``onnx.reference`` evaluator that runs ``com.fp8ort`` nodes with ``fp8ort.reference``."""
    if isinstance(model, ir.Model):
        model = ir.to_proto(model)
    return ReferenceEvaluator(model, new_ops=[FP8Conv, FP8MatMul, FP8Quantize, FP8Dequantize])


def run_reference(model: onnx.ModelProto | ir.Model | str, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Outputs of ``model`` on ``feed`` through the reference semantics."""
    return reference_session(model).run(None, feed)
