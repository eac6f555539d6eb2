"""The benchmark's PyTorch side: the exports every ONNX system runs, and the PyTorch FP16 baselines.

Models (random weights, seed 0: no hub downloads on the GPU machine): torchvision ResNet-50, timm EfficientNet-B0,
Hugging Face BERT-base at sequence 128. Exported with the TorchScript exporter (``dynamo=False``), opset 17, batch
dimension ``N`` dynamic, as a user would.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from harness import BATCH_DIM, BERT_SEQ, BERT_VOCAB, median_seconds

COMPILE_MODE = "max-autotune-no-cudagraphs"  # inductor's best kernels; the CUDA graph is ours (same as the eager row)


def _bert_encoder() -> object:
    """BERT-base taking (input_ids, attention_mask) by keyword (forward()'s parameter order differs between versions).

    The 2-D mask becomes the additive 4-D mask as transformers 4 built it (expand, ``1 - mask``, fill with the
    lowest float), and attention is "eager" (MatMul/Softmax): the pattern ORT's transformer optimizer fuses into
    its Attention op. transformers 5 builds the mask with Range/GatherElements/IsNaN, which the optimizer does not
    fuse. Same arithmetic either way; every ONNX system runs this one export (time_torch switches PyTorch to SDPA).
    """
    import torch
    from transformers import BertConfig, BertModel

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel(BertConfig(attn_implementation="eager"))

        def forward(self, input_ids, attention_mask):
            n, s = attention_mask.shape
            dtype = self.bert.embeddings.word_embeddings.weight.dtype  # float32 when exported, float16 in time_torch
            expanded = attention_mask[:, None, None, :].expand(n, 1, s, s).to(dtype)
            inverted = 1.0 - expanded
            additive = inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)
            return self.bert(input_ids=input_ids, attention_mask=additive).last_hidden_state

    return Encoder().eval()


def export_model(name: str, path: Path) -> object:
    """Exports a float model as a user would (TorchScript exporter, opset 17); returns the torch module."""
    import torch

    torch.manual_seed(0)
    n = BATCH_DIM
    if name in ("resnet50", "efficientnet_b0"):
        if name == "resnet50":
            import torchvision

            m = torchvision.models.resnet50().eval()
        else:
            import timm

            m = timm.create_model("efficientnet_b0", pretrained=False).eval()
        args, names, outs = (torch.randn(1, 3, 224, 224),), ["input"], ["logits"]
        axes = {"input": {0: n}, "logits": {0: n}}
    elif name == "bert":
        m = _bert_encoder()
        ids = torch.randint(0, BERT_VOCAB, (1, BERT_SEQ))
        mask = torch.ones(1, BERT_SEQ, dtype=torch.int64)
        args, names, outs = (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"]
        axes = {"input_ids": {0: n}, "attention_mask": {0: n}, "last_hidden_state": {0: n}}
    else:
        raise ValueError(f"unknown model {name!r}")
    torch.onnx.export(
        m, args, str(path), input_names=names, output_names=outs, dynamic_axes=axes, opset_version=17, dynamo=False
    )
    return m


def export_and_quantize(name: str, work: Path) -> tuple[Path, Path]:
    """``name`` exported into ``work`` and fp8ort.quantize's model of it (default config, 8 calibration samples,
    seed 1): (float model, FP8 model). Files already in ``work`` are kept, so a directory reused across runs exports
    and quantizes once."""
    from harness import make_inputs

    import fp8ort

    work.mkdir(parents=True, exist_ok=True)
    fp32, fp8 = work / f"{name}.onnx", work / f"{name}.fp8.onnx"
    if not fp32.is_file():
        export_model(name, fp32)
    if not fp8.is_file():
        fp8ort.quantize(str(fp32), str(fp8), calibration_data=make_inputs(name, 8, seed=1))
    return fp32, fp8


def _graph_replay_seconds(fn: object, args: list, runs: int) -> float:
    """Captures ``fn(*args)`` as a CUDA graph (after warm-ups on a side stream) and times its replay."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # torch.compile compiles (and autotunes) here
            fn(*args)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn(*args)
    return median_seconds(g.replay, torch.cuda.synchronize, runs, warmups=5)


def time_torch(module: object, name: str, feed: dict[str, np.ndarray], runs: int, *, compile: bool = False) -> float:
    """PyTorch FP16 (channels_last for the CNNs) replayed as a CUDA graph; with ``compile``, the module goes through
    ``torch.compile(mode=COMPILE_MODE)`` first (minutes per batch size). Median seconds per replay."""
    import torch

    m = module.half().cuda()
    if name == "bert":  # PyTorch's best attention for its own rows (the export was written with "eager")
        if hasattr(m.bert, "set_attn_implementation"):
            m.bert.set_attn_implementation("sdpa")
        else:
            m.bert.config._attn_implementation = "sdpa"
        args = [torch.from_numpy(feed["input_ids"]).cuda(), torch.from_numpy(feed["attention_mask"]).cuda()]
    else:
        m = m.to(memory_format=torch.channels_last)
        args = [torch.from_numpy(feed["input"]).half().cuda().to(memory_format=torch.channels_last)]
    try:
        with torch.inference_mode():
            if compile:
                torch._dynamo.reset()  # one specialization per batch size, no leftovers from the last one
                fn = torch.compile(m, mode=COMPILE_MODE, dynamic=False)
            else:
                fn = m
            return _graph_replay_seconds(fn, args, runs)
    finally:
        module.float().cpu()
        torch.cuda.empty_cache()
