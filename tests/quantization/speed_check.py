"""How long ``fp8ort.quantize`` takes on full-size exports (a benchmark, not a test: pytest does not collect it).

    python tests/quantization/speed_check.py [resnet50] [bert-base] [--profile]

ResNet-50 (torchvision's layout, written in torch here, random weights) exported with ``dynamo=False`` at opset 17
and quantized with 32 calibration images of 224x224; BERT-base (``transformers.BertConfig()`` defaults, random
weights) exported the same way and quantized with 32 sequences of 128 tokens. Prints the export and quantize times
(targets: 60 s and 120 s) and, with ``--profile``, the functions that take the time.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import fp8ort  # noqa: E402
from fp8ort import zoo  # noqa: E402


def resnet50():
    import torch
    import torch_models as tm
    from torch import nn

    class ResNet50(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64)
            self.relu, self.maxpool = nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
            blocks, cin = [], 64
            for stage, n in enumerate((3, 4, 6, 3)):
                width = 64 * 2**stage
                for i in range(n):
                    blocks.append(tm.Bottleneck(cin, width, 2 if (i == 0 and stage > 0) else 1))
                    cin = width * 4
            self.layers = nn.Sequential(*blocks)
            self.fc = nn.Linear(2048, 1000)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.layers(self.maxpool(self.relu(self.bn1(self.conv1(x)))))
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))

    torch.manual_seed(0)
    return ResNet50().eval(), (torch.randn(2, 3, 224, 224),), ["x"], {"x": {0: "N"}}


def bert_base():
    import torch
    import torch_models as tm
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = tm.HiddenStates(BertModel(BertConfig(), add_pooling_layer=False)).eval()
    args = (torch.randint(0, 30000, (2, 128)), torch.ones(2, 128, dtype=torch.long))
    names = ["input_ids", "attention_mask"]
    return model, args, names, {n: {0: "N", 1: "S"} for n in names}


def calibration(name: str) -> dict[str, np.ndarray]:
    if name == "resnet50":
        return {"x": zoo.synthetic_images(32, seed=1)}
    rng = np.random.default_rng(1)
    return {
        "input_ids": rng.integers(0, 30000, (32, 128)).astype(np.int64),
        "attention_mask": np.ones((32, 128), np.int64),
    }


def main(argv: list[str]) -> None:
    import torch

    profile = "--profile" in argv
    names = [a for a in argv if not a.startswith("--")] or ["resnet50", "bert-base"]
    builders = {"resnet50": resnet50, "bert-base": bert_base}
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, fp8ort from {os.path.dirname(fp8ort.__file__)}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            model, args, input_names, axes = builders[name]()
            path = os.path.join(tmp, f"{name}.onnx")
            t = time.perf_counter()
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    model, args, path, input_names=input_names, dynamic_axes=axes, opset_version=17, dynamo=False
                )
            t_export = time.perf_counter() - t
            calib = calibration(name)
            prof = cProfile.Profile() if profile else None
            t = time.perf_counter()
            if prof:
                prof.enable()
            _, report = fp8ort.quantize(
                path, os.path.join(tmp, f"{name}.fp8.onnx"), calibration_data=calib, return_report=True
            )
            if prof:
                prof.disable()
            t_quant = time.perf_counter() - t
            print(
                f"{name}: export {t_export:.1f} s, quantize {t_quant:.1f} s with {len(next(iter(calib.values())))}"
                f" calibration samples; {len(report.fp8_nodes)} FP8 ops, {100 * report.fp8_mac_share:.1f}% of "
                f"{report.total_macs / 1e9:.2f} GMAC per sample; output SQNR {report.output_sqnr_db}"
            )
            if prof:
                pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main(sys.argv[1:])
