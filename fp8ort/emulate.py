"""Run a quantized fp8ort model without the native library: ``onnx.reference`` plus ``fp8ort.reference``.

Slow (NumPy, exact FP8 products), but it is the emulated route of the CPU reference semantics: tests and
numerics debugging use it where ``libfp8ort.so`` is not built.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def _activation(activation: str | None, alpha: float | None, beta: float | None) -> dict[str, Any]:
    """The activation keyword arguments of the reference functions; ``activation_alpha``/``activation_beta`` only
    where the node has them (the reference fills in each activation's defaults)."""
    kwargs: dict[str, Any] = {"activation": activation or ""}
    if alpha is not None:
        kwargs["activation_alpha"] = float(alpha)
    if beta is not None:
        kwargs["activation_beta"] = float(beta)
    return kwargs


class FP8Conv(OpRun):
    op_domain = DOMAIN

    def _run(
        self,
        *args: np.ndarray | None,
        strides: Sequence[int] | None = None,
        pads: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        group: int | None = None,
        activation: str | None = None,
        activation_alpha: float | None = None,
        activation_beta: float | None = None,
        layout: str | None = None,
        output_dtype: int | None = None,
    ) -> tuple[np.ndarray]:
        y = ref.fp8_conv(
            *[_opt(args, i) for i in range(8)],
            strides=strides or (1, 1),
            pads=pads or (0, 0, 0, 0),
            dilations=dilations or (1, 1),
            group=group or 1,
            layout=layout or "NCHW",
            output_dtype=output_dtype or onnx.TensorProto.FLOAT,
            **_activation(activation, activation_alpha, activation_beta),
        )
        return (y,)


class FP8MatMul(OpRun):
    op_domain = DOMAIN

    def _run(
        self,
        *args: np.ndarray | None,
        transB: int | None = None,  # noqa: N803 (the ONNX attribute name)
        activation: str | None = None,
        activation_alpha: float | None = None,
        activation_beta: float | None = None,
        output_dtype: int | None = None,
    ) -> tuple[np.ndarray]:
        y = ref.fp8_matmul(
            *[_opt(args, i) for i in range(8)],
            transB=transB or 0,
            output_dtype=output_dtype or onnx.TensorProto.FLOAT,
            **_activation(activation, activation_alpha, activation_beta),
        )
        return (y,)


class FP8Quantize(OpRun):
    op_domain = DOMAIN

    def _run(
        self, x: np.ndarray, scale: np.ndarray, output_dtype: int | None = None, saturate: int | None = None
    ) -> tuple[np.ndarray]:
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

    def _run(self, x: np.ndarray, scale: np.ndarray, output_dtype: int | None = None) -> tuple[np.ndarray]:
        return (ref.fp8_dequantize(x, scale, output_dtype=output_dtype or onnx.TensorProto.FLOAT),)


class FP8MaxPool(OpRun):
    op_domain = DOMAIN

    def _run(
        self,
        x: np.ndarray,
        kernel_shape: Sequence[int] | None = None,
        strides: Sequence[int] | None = None,
        pads: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        ceil_mode: int | None = None,
        layout: str | None = None,
    ) -> tuple[np.ndarray]:
        y = ref.fp8_max_pool(
            x,
            kernel_shape=kernel_shape,
            strides=strides or (1, 1),
            pads=pads or (0, 0, 0, 0),
            dilations=dilations or (1, 1),
            ceil_mode=ceil_mode or 0,
            layout=layout or "NHWC",
        )
        return (y,)


class FP8Attention(OpRun):
    op_domain = DOMAIN

    def _run(
        self,
        *args: np.ndarray | None,
        num_heads: int | None = None,
        scale: float | None = None,
        nan_to_zero: int | None = None,
        output_dtype: int | None = None,
    ) -> tuple[np.ndarray]:
        y = ref.fp8_attention(
            *[_opt(args, i) for i in range(5)],
            num_heads=num_heads or 0,
            scale=scale,
            nan_to_zero=nan_to_zero or 0,
            output_dtype=output_dtype or onnx.TensorProto.FLOAT,
        )
        return (y,)


class FP8LayerNormalization(OpRun):
    op_domain = DOMAIN

    def _run(
        self,
        *args: np.ndarray | None,
        axis: int | None = None,
        epsilon: float | None = None,
        output_dtype: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        return ref.fp8_layer_normalization(
            *[_opt(args, i) for i in range(4)],
            axis=-1 if axis is None else axis,
            epsilon=1e-5 if epsilon is None else epsilon,
            output_dtype=output_dtype or onnx.TensorProto.FLOAT8E4M3FN,
        )


class FP8GlobalAveragePool(OpRun):
    op_domain = DOMAIN

    def _run(self, X: np.ndarray, x_scale: np.ndarray, layout: str | None = None) -> tuple[np.ndarray]:
        return (ref.fp8_global_average_pool(X, x_scale, layout=layout or "NHWC"),)


class FP8ChannelMul(OpRun):
    op_domain = DOMAIN

    def _run(
        self, *args: np.ndarray | None, layout: str | None = None, output_dtype: int | None = None
    ) -> tuple[np.ndarray]:
        y = ref.fp8_channel_mul(
            *[_opt(args, i) for i in range(4)],
            layout=layout or "NHWC",
            output_dtype=output_dtype or onnx.TensorProto.FLOAT8E4M3FN,
        )
        return (y,)


class GatherElements(OpRun):
    """ONNX GatherElements through ``np.take_along_axis``: onnx.reference's own (``np.choose``) takes at most 64
    choices along the axis and fails on the position-id gathers of Hugging Face encoder exports."""

    def _run(self, data: np.ndarray, indices: np.ndarray, axis: int | None = None) -> tuple[np.ndarray]:
        axis = axis or 0
        indices = np.where(indices < 0, indices + data.shape[axis], indices)
        return (np.take_along_axis(data, indices, axis=axis),)


def reference_session(model: onnx.ModelProto | ir.Model | str) -> ReferenceEvaluator:
    """An ``onnx.reference`` evaluator that runs ``com.fp8ort`` nodes with ``fp8ort.reference``."""
    if isinstance(model, ir.Model):
        model = ir.to_proto(model)
    ops = [
        FP8Conv,
        FP8MatMul,
        FP8Quantize,
        FP8Dequantize,
        FP8MaxPool,
        FP8Attention,
        FP8LayerNormalization,
        FP8GlobalAveragePool,
        FP8ChannelMul,
        GatherElements,
    ]
    return ReferenceEvaluator(model, new_ops=ops)


def run_reference(model: onnx.ModelProto | ir.Model | str, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Outputs of ``model`` on ``feed`` through the reference semantics."""
    return reference_session(model).run(None, feed)
