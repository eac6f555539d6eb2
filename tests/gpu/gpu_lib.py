"""ctypes access to the kernel library (libfp8ort_kernels.so) and device memory, for the GPU tests and bench/."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np


class Runtime:
    """cudaMalloc/hipMalloc and friends through ctypes; every call is checked."""

    def __init__(self) -> None:
        self.lib = None
        for name, prefix in (
            ("libcudart.so.13", "cuda"),
            ("libcudart.so.12", "cuda"),
            ("libcudart.so", "cuda"),
            ("libamdhip64.so", "hip"),
            ("libamdhip64.so.6", "hip"),
        ):
            try:
                self.lib = ctypes.CDLL(name)
                self.prefix = prefix
                break
            except OSError:
                continue
        if self.lib is None:
            raise OSError("no CUDA or HIP runtime library found")
        self._fn = {}
        for fn in ("Malloc", "Free", "Memcpy", "Memset", "DeviceSynchronize", "GetDeviceCount", "GetErrorString"):
            self._fn[fn] = getattr(self.lib, self.prefix + fn)
        self._fn["GetErrorString"].restype = ctypes.c_char_p
        self._fn["Memcpy"].argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self._fn["Memset"].argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        self._fn["Free"].argtypes = [ctypes.c_void_p]
        self.allocations: list[int] = []
        self.streams: list[int] = []

    def check(self, err: int, what: str) -> None:
        if err != 0:
            msg = self._fn["GetErrorString"](err).decode()
            raise RuntimeError(f"{self.prefix}{what} failed: {err} {msg}")

    def device_count(self) -> int:
        n = ctypes.c_int(0)
        err = self._fn["GetDeviceCount"](ctypes.byref(n))
        return n.value if err == 0 else 0

    def alloc(self, nbytes: int) -> int:
        p = ctypes.c_void_p()
        self.check(self._fn["Malloc"](ctypes.byref(p), ctypes.c_size_t(max(nbytes, 1))), "Malloc")
        self.allocations.append(p.value)
        return p.value

    def to_device(self, a: np.ndarray) -> int:
        a = np.ascontiguousarray(a)
        p = self.alloc(a.nbytes)
        self.check(self._fn["Memcpy"](p, a.ctypes.data, a.nbytes, 1), "Memcpy H2D")
        return p

    def poisoned(self, nbytes: int, byte: int = 0xFF) -> int:
        p = self.alloc(nbytes)
        self.check(self._fn["Memset"](p, byte, nbytes), "Memset")
        return p

    def from_device(self, p: int, shape, dtype) -> np.ndarray:
        out = np.empty(shape, dtype=dtype)
        self.sync()
        self.check(self._fn["Memcpy"](out.ctypes.data, p, out.nbytes, 2), "Memcpy D2H")
        return out

    def stream(self) -> int:
        """A new non-blocking stream (destroyed by free_all)."""
        s = ctypes.c_void_p()
        create = getattr(self.lib, self.prefix + "StreamCreateWithFlags")
        self.check(create(ctypes.byref(s), ctypes.c_uint(1)), "StreamCreateWithFlags")
        self.streams.append(s.value)
        return s.value

    def sync(self) -> None:
        self.check(self._fn["DeviceSynchronize"](), "DeviceSynchronize")

    def free_all(self) -> None:
        for p in self.allocations:
            self._fn["Free"](p)
        self.allocations.clear()
        destroy = getattr(self.lib, self.prefix + "StreamDestroy") if self.streams else None
        for st in self.streams:
            destroy(ctypes.c_void_p(st))
        self.streams.clear()


class Epilogue(ctypes.Structure):
    _fields_ = [
        ("x_scale", ctypes.c_void_p),
        ("w_scale", ctypes.c_void_p),
        ("w_scale_count", ctypes.c_int64),
        ("bias", ctypes.c_void_p),
        ("z", ctypes.c_void_p),
        ("z_type", ctypes.c_int),
        ("z_scale", ctypes.c_void_p),
        ("y_scale", ctypes.c_void_p),
        ("relu", ctypes.c_int),
        ("y_type", ctypes.c_int),
        # fp8ort_activation and its parameters (added after y_type; zero = none, relu decides)
        ("activation", ctypes.c_int),
        ("activation_alpha", ctypes.c_float),
        ("activation_beta", ctypes.c_float),
    ]


# fp8ort_activation values (fp8_kernels.h) by the ops' activation attribute
ACTIVATION_CODES = {
    "": 0,
    "Relu": 1,
    "Clip": 2,
    "Sigmoid": 3,
    "Silu": 4,
    "HardSigmoid": 5,
    "HardSwish": 6,
    "Gelu": 7,
    "GeluTanh": 8,
}


class ConvShape(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_int64)
        for name in (
            "batch",
            "in_h",
            "in_w",
            "in_c",
            "out_c",
            "kernel_h",
            "kernel_w",
            "stride_h",
            "stride_w",
            "pad_top",
            "pad_left",
            "pad_bottom",
            "pad_right",
            "dilation_h",
            "dilation_w",
            "group",
        )
    ]


def conv_shape(
    batch: int,
    h: int,
    w: int,
    c: int,
    m: int,
    kernel: tuple[int, int],
    strides: tuple[int, int] = (1, 1),
    pads: tuple[int, int, int, int] = (0, 0, 0, 0),
    dilations: tuple[int, int] = (1, 1),
    group: int = 1,
) -> ConvShape:
    """A ConvShape from ONNX-style fields: NHWC input batch x h x w x c, m outputs, pads (top, left, bottom, right)."""
    return ConvShape(
        batch=batch,
        in_h=h,
        in_w=w,
        in_c=c,
        out_c=m,
        kernel_h=kernel[0],
        kernel_w=kernel[1],
        stride_h=strides[0],
        stride_w=strides[1],
        pad_top=pads[0],
        pad_left=pads[1],
        pad_bottom=pads[2],
        pad_right=pads[3],
        dilation_h=dilations[0],
        dilation_w=dilations[1],
        group=group,
    )


def load_kernels(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    lib.fp8ort_gpu_last_error.restype = ctypes.c_char_p
    lib.fp8ort_quantize.argtypes = [p, i32, p, p, i32, i64, i32, p]
    lib.fp8ort_dequantize.argtypes = [p, i32, p, p, i32, i64, p]
    lib.fp8ort_quantize_padded.argtypes = [p, i32, p, p, i32, i64, i64, i64, p]
    lib.fp8ort_amax.argtypes = [p, i32, i64, p, p]
    lib.fp8ort_gemm_packed_bytes.argtypes = [i64, i64]
    lib.fp8ort_gemm_packed_bytes.restype = ctypes.c_size_t
    lib.fp8ort_gemm_pack_weight.argtypes = [p, i32, i64, i64, p, p]
    lib.fp8ort_gemm.argtypes = [p, p, i32, i64, i64, i64, ctypes.POINTER(Epilogue), p, p]
    lib.fp8ort_gemm_kernel_name.argtypes = [i32, i64, i64, i64]
    lib.fp8ort_gemm_kernel_name.restype = ctypes.c_char_p
    lib.fp8ort_gemm_set_kernel_override.argtypes = [i32]
    lib.fp8ort_epilogue_set_silu_variant.argtypes = [i32]
    lib.fp8ort_epilogue_set_z_ahead.argtypes = [i32]
    lib.fp8ort_epilogue_set_fast_rows.argtypes = [i32]
    lib.fp8ort_gemm_set_wide_stream.argtypes = [i32]
    lib.fp8ort_launch_set_pdl.argtypes = [i32]
    lib.fp8ort_conv_set_depthwise_variant.argtypes = [i32]
    lib.fp8ort_conv_set_few_channels.argtypes = [i32]
    lib.fp8ort_conv_set_im2col.argtypes = [i32]
    lib.fp8ort_conv_set_strided_1x1.argtypes = [i32]
    lib.fp8ort_conv_padded_in_c.argtypes = [i32, ctypes.POINTER(ConvShape)]
    lib.fp8ort_conv_padded_in_c.restype = i64
    lib.fp8ort_conv_packed_bytes.argtypes = [ctypes.POINTER(ConvShape)]
    lib.fp8ort_conv_packed_bytes.restype = ctypes.c_size_t
    lib.fp8ort_conv_out_h.argtypes = [ctypes.POINTER(ConvShape)]
    lib.fp8ort_conv_out_h.restype = i64
    lib.fp8ort_conv_out_w.argtypes = [ctypes.POINTER(ConvShape)]
    lib.fp8ort_conv_out_w.restype = i64
    lib.fp8ort_conv_pack_weight.argtypes = [p, ctypes.POINTER(ConvShape), p, p]
    lib.fp8ort_conv_kernel_name.argtypes = [i32, ctypes.POINTER(ConvShape)]
    lib.fp8ort_conv_kernel_name.restype = ctypes.c_char_p
    lib.fp8ort_conv_nhwc.argtypes = [p, p, i32, ctypes.POINTER(ConvShape), ctypes.POINTER(Epilogue), p, p]
    lib.fp8ort_gemm_workspace_bytes.argtypes = [i32, i64, i64, i64]
    lib.fp8ort_gemm_workspace_bytes.restype = ctypes.c_size_t
    lib.fp8ort_gemm_ws.argtypes = [p, p, i32, i64, i64, i64, ctypes.POINTER(Epilogue), p, p, ctypes.c_size_t, p]
    lib.fp8ort_conv_workspace_bytes.argtypes = [i32, ctypes.POINTER(ConvShape)]
    lib.fp8ort_conv_workspace_bytes.restype = ctypes.c_size_t
    lib.fp8ort_conv_nhwc_ws.argtypes = [
        p,
        p,
        i32,
        ctypes.POINTER(ConvShape),
        ctypes.POINTER(Epilogue),
        p,
        p,
        ctypes.c_size_t,
        p,
    ]
    if hasattr(lib, "fp8ort_gemm_blaslt"):  # libraries built before the cuBLASLt route lack these
        lib.fp8ort_gemm_blaslt_workspace_bytes.argtypes = [i64, i64, i64]
        lib.fp8ort_gemm_blaslt_workspace_bytes.restype = ctypes.c_size_t
        lib.fp8ort_gemm_blaslt.argtypes = [p, p, i32, i64, i64, i64, ctypes.POINTER(Epilogue), p, p, ctypes.c_size_t, p]
        lib.fp8ort_gemm_blaslt.restype = i32
        lib.fp8ort_blaslt_available.argtypes = []
        lib.fp8ort_blaslt_available.restype = i32
        lib.fp8ort_epilogue_apply.argtypes = [p, i64, i64, i64, ctypes.POINTER(Epilogue), p, p]
        lib.fp8ort_epilogue_apply.restype = i32
    for fn in (
        "fp8ort_quantize",
        "fp8ort_dequantize",
        "fp8ort_quantize_padded",
        "fp8ort_amax",
        "fp8ort_gemm_pack_weight",
        "fp8ort_gemm",
        "fp8ort_conv_pack_weight",
        "fp8ort_conv_nhwc",
        "fp8ort_gemm_ws",
        "fp8ort_conv_nhwc_ws",
    ):
        getattr(lib, fn).restype = i32
    return lib
