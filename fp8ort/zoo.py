"""Embedded demo model and inputs: ResNet-50 built with onnx helpers (random weights, no torch, no download)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.n = 0

    def _name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n}"

    def init(self, name: str, a: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(a.astype(np.float32), name))
        return name

    def conv_bn(
        self, x: str, cin: int, cout: int, k: int, stride: int, name: str, relu: bool = True, gamma: float = 1.0
    ) -> str:
        fan_in = cin * k * k
        w = self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan_in)
        self.init(f"{name}.weight", w)
        y = f"{name}.conv"
        self.nodes.append(
            helper.make_node(
                "Conv",
                [x, f"{name}.weight"],
                [y],
                name=f"{name}/Conv",
                kernel_shape=[k, k],
                strides=[stride, stride],
                pads=[k // 2] * 4,
            )
        )
        bn = [
            self.init(f"{name}.bn.{p}", v)
            for p, v in (
                ("scale", gamma * (1 + 0.1 * self.rng.standard_normal(cout))),
                ("bias", 0.1 * self.rng.standard_normal(cout)),
                ("mean", 0.1 * self.rng.standard_normal(cout)),
                ("var", 1 + 0.2 * self.rng.random(cout)),
            )
        ]
        out = f"{name}.bn"
        self.nodes.append(helper.make_node("BatchNormalization", [y, *bn], [out], name=f"{name}/BatchNormalization"))
        if relu:
            self.nodes.append(helper.make_node("Relu", [out], [f"{name}.relu"], name=f"{name}/Relu"))
            out = f"{name}.relu"
        return out

    def bottleneck(self, x: str, cin: int, width: int, stride: int, name: str) -> str:
        cout = width * 4
        y = self.conv_bn(x, cin, width, 1, 1, f"{name}.conv1")
        y = self.conv_bn(y, width, width, 3, stride, f"{name}.conv2")
        y = self.conv_bn(y, width, cout, 1, 1, f"{name}.conv3", relu=False, gamma=0.3)
        skip = x
        if stride != 1 or cin != cout:
            skip = self.conv_bn(x, cin, cout, 1, stride, f"{name}.downsample", relu=False)
        self.nodes.append(helper.make_node("Add", [y, skip], [f"{name}.add"], name=f"{name}/Add"))
        self.nodes.append(helper.make_node("Relu", [f"{name}.add"], [f"{name}.out"], name=f"{name}/Relu"))
        return f"{name}.out"


def resnet50(seed: int = 0, num_classes: int = 1000, batch: str | int = "N") -> onnx.ModelProto:
    """ResNet-50 v1.5 (stride on the 3x3) with BatchNorm, random He-initialized weights, opset 21."""
    return resnet(seed, num_classes, batch)


def resnet(
    seed: int = 0,
    num_classes: int = 1000,
    batch: str | int = "N",
    blocks: tuple[int, ...] = (3, 4, 6, 3),
    width: int = 64,
    size: int = 224,
) -> onnx.ModelProto:
    """A bottleneck ResNet with random weights: ``blocks`` per stage, stem ``width`` channels, ``size``-pixel
    inputs. The defaults are ResNet-50; ``fp8ort demo --quick`` uses a small one."""
    b = _Builder(seed)
    y = b.conv_bn("input", 3, width, 7, 2, "stem")
    b.nodes.append(
        helper.make_node(
            "MaxPool", [y], ["stem.pool"], name="stem/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
        )
    )
    y, cin = "stem.pool", width
    for stage, n_blocks in enumerate(blocks):
        w, stride = width * 2**stage, 1 if stage == 0 else 2
        for i in range(n_blocks):
            y = b.bottleneck(y, cin, w, stride if i == 0 else 1, f"layer{stage + 1}.{i}")
            cin = w * 4
    b.nodes.append(helper.make_node("GlobalAveragePool", [y], ["pool"], name="head/GlobalAveragePool"))
    b.nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="head/Flatten"))
    b.init("fc.weight", b.rng.standard_normal((num_classes, cin)) * np.sqrt(1.0 / cin))
    b.init("fc.bias", 0.01 * b.rng.standard_normal(num_classes))
    b.nodes.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], name="head/fc", transB=1))
    name = "resnet50" if (blocks, width) == ((3, 4, 6, 3), 64) else "resnet"
    graph = helper.make_graph(
        b.nodes,
        name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, num_classes])],
        initializer=b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="fp8ort.zoo")
    model.ir_version = 10
    return model


def synthetic_images(n: int, seed: int = 0, size: int = 224) -> np.ndarray:
    """Photo-like inputs without a download: smooth random color fields plus edges and noise, normalized as
    ImageNet inputs ([n, 3, size, size] float32). Good enough for a random-weight ResNet's calibration."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    out = np.empty((n, 3, size, size), np.float32)
    for i in range(n):
        img = np.zeros((3, size, size), np.float32)
        for _ in range(6):
            fx, fy, ph = rng.uniform(0.5, 6, 2).tolist() + [rng.uniform(0, 6.3)]
            img += rng.uniform(0, 0.3, (3, 1, 1)) * np.sin(2 * np.pi * (fx * xx + fy * yy) + ph)
        cx, cy, r = rng.uniform(0.2, 0.8, 2).tolist() + [rng.uniform(0.1, 0.3)]
        img += rng.uniform(-0.4, 0.4, (3, 1, 1)) * (((xx - cx) ** 2 + (yy - cy) ** 2) < r * r)
        img += 0.03 * rng.standard_normal((3, size, size))
        out[i] = np.clip(img + 0.5, 0, 1)
    return (out - IMAGENET_MEAN) / IMAGENET_STD
