"""Tiny torchvision-, timm- and Hugging Face-style models for the export tests (random weights, CPU, seconds).

Imported only after ``pytest.importorskip("torch")``. The CNNs take 1x3x64x64-sized images, the encoders token ids
of length 16.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# ---------------------------------------------------------------------------------------------- CNNs


class Bottleneck(nn.Module):
    """torchvision's ResNet bottleneck (BatchNorm after every conv, ReLU, projection shortcut)."""

    def __init__(self, cin: int, width: int, stride: int = 1, groups: int = 1) -> None:
        super().__init__()
        cout = width * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        return self.relu(self.bn3(self.conv3(y)) + identity)


class ResNet(nn.Module):
    """A 3-block ResNet-50-style network; the last block is grouped (ResNeXt). BatchNorms keep torchvision's
    initialization, so their folded biases are equal and ``dynamo=False`` deduplicates them behind Identity."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16)
        self.relu, self.maxpool = nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
        self.layers = nn.Sequential(Bottleneck(16, 8), Bottleneck(32, 8), Bottleneck(32, 16, 2, groups=4))
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.maxpool(self.relu(self.bn1(self.conv1(x)))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SqueezeExcite(nn.Module):
    def __init__(self, c: int, r: int, act: type[nn.Module], gate: type[nn.Module]) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2, self.gate = nn.Conv2d(c, r, 1), act(), nn.Conv2d(r, c, 1), gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(self.fc2(self.act(self.fc1(F.adaptive_avg_pool2d(x, 1)))))


class InvertedResidual(nn.Module):
    """MobileNetV3 / EfficientNet block: 1x1 expansion, depthwise kxk, squeeze-excitation, 1x1 projection."""

    def __init__(
        self,
        cin: int,
        exp: int,
        cout: int,
        k: int,
        stride: int,
        act: type[nn.Module],
        se_act: type[nn.Module],
        gate: type[nn.Module] | None,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        if exp != cin:
            layers += [nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), act()]
        layers += [nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False), nn.BatchNorm2d(exp), act()]
        if gate is not None:
            layers.append(SqueezeExcite(exp, max(8, exp // 4), se_act, gate))
        layers += [nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


class MobileNetV3(nn.Module):
    """MobileNetV3-style: Hardswish, ReLU, SE with Hardsigmoid gates, a Linear+Hardswish head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.blocks = nn.Sequential(
            InvertedResidual(16, 16, 16, 3, 1, nn.ReLU, nn.ReLU, nn.Hardsigmoid),
            InvertedResidual(16, 48, 24, 3, 2, nn.ReLU, nn.ReLU, None),
            InvertedResidual(24, 72, 24, 5, 1, nn.Hardswish, nn.ReLU, nn.Hardsigmoid),
        )
        self.last = nn.Sequential(nn.Conv2d(24, 96, 1, bias=False), nn.BatchNorm2d(96), nn.Hardswish())
        self.head = nn.Sequential(nn.Linear(96, 64), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.last(self.blocks(self.stem(x)))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class EfficientNet(nn.Module):
    """EfficientNet-B0-style MBConv blocks: SiLU everywhere, SE with Sigmoid gates."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU())
        self.blocks = nn.Sequential(
            InvertedResidual(16, 16, 16, 3, 1, nn.SiLU, nn.SiLU, nn.Sigmoid),
            InvertedResidual(16, 64, 24, 3, 2, nn.SiLU, nn.SiLU, nn.Sigmoid),
            InvertedResidual(24, 96, 24, 5, 1, nn.SiLU, nn.SiLU, nn.Sigmoid),
        )
        self.head = nn.Sequential(nn.Conv2d(24, 64, 1, bias=False), nn.BatchNorm2d(64), nn.SiLU())
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.head(self.blocks(self.stem(x))), 1), 1))


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.layer_norm(x.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, LayerNorm, Linear 4x + GELU + Linear on channels-last data, layer scale, residual."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.dwconv, self.norm = nn.Conv2d(c, c, 7, padding=3, groups=c), nn.LayerNorm(c)
        self.pwconv1, self.act, self.pwconv2 = nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(0.5 * torch.ones(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(self.dwconv(x).permute(0, 2, 3, 1))
        y = self.pwconv2(self.act(self.pwconv1(y))) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 4, 4), LayerNorm2d(16))
        self.stage1 = nn.Sequential(ConvNeXtBlock(16), ConvNeXtBlock(16))
        self.down = nn.Sequential(LayerNorm2d(16), nn.Conv2d(16, 32, 2, 2))
        self.stage2 = ConvNeXtBlock(32)
        self.norm, self.head = nn.LayerNorm(32), nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(self.norm(x.mean((2, 3))))


class ViTAttention(nn.Module):
    """timm's ViT attention: one qkv projection, heads split by reshape/permute/unbind, SDPA with its default scale
    (exported as a computation on Shape(q)[-1]), heads merged, out-projection."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads, self.qkv, self.proj = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c))


class ViTBlock(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.attn, self.norm2 = nn.LayerNorm(dim), ViTAttention(dim, heads), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    """A small timm-style vision transformer: 16x16 patches, class token, position embedding, two blocks."""

    def __init__(self, dim: int = 32, heads: int = 2) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 16, 16)
        self.cls = nn.Parameter(0.5 * torch.randn(1, 1, dim))
        self.pos = nn.Parameter(0.5 * torch.randn(1, 17, dim))
        self.blocks = nn.Sequential(ViTBlock(dim, heads), ViTBlock(dim, heads))
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.blocks(x))[:, 0])


def randomize_batchnorm(model: nn.Module, seed: int = 0) -> nn.Module:
    """Trained-looking BatchNorm statistics (scale, shift, running mean and variance)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(1.0 + 0.2 * torch.randn(n, generator=g))
                m.bias.copy_(0.1 * torch.randn(n, generator=g))
                m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + torch.rand(n, generator=g))
    return model


# ------------------------------------------------------------------------------------------- encoders


class HiddenStates(nn.Module):
    """A Hugging Face encoder called with keyword arguments, returning ``last_hidden_state``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


ENCODER_DIMS = {"hidden": 32, "heads": 2, "layers": 2, "intermediate": 64}
INIT_STD = (
    0.2  # Linear weights 10x Hugging Face's default: the attention and FFN branches, not the embeddings, dominate
)


def bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    d = ENCODER_DIMS
    cfg = BertConfig(
        vocab_size=100,
        hidden_size=d["hidden"],
        num_hidden_layers=d["layers"],
        num_attention_heads=d["heads"],
        intermediate_size=d["intermediate"],
        max_position_embeddings=64,
    )
    return HiddenStates(BertModel(cfg, add_pooling_layer=False))


def distilbert() -> nn.Module:
    from transformers import DistilBertConfig, DistilBertModel

    d = ENCODER_DIMS
    cfg = DistilBertConfig(
        vocab_size=100,
        dim=d["hidden"],
        n_layers=d["layers"],
        n_heads=d["heads"],
        hidden_dim=d["intermediate"],
        max_position_embeddings=64,
    )
    return HiddenStates(DistilBertModel(cfg))


def encoder_macs(seq: int) -> tuple[int, int]:
    """(weight-layer MACs, attention MACs) per sequence of ``seq`` tokens of the encoders above."""
    d = ENCODER_DIMS
    h, i, n = d["hidden"], d["intermediate"], d["layers"]
    linear = n * seq * (4 * h * h + 2 * h * i)
    attention = n * 2 * seq * seq * h  # Q @ K^T and P @ V over all heads
    return linear, attention


CNNS = {"resnet": ResNet, "mobilenetv3": MobileNetV3, "efficientnet": EfficientNet, "convnext": ConvNeXt}
VITS = {"vit": ViT}  # attention in the form SplitQkvHeadsPass rewrites
IMAGES = {**CNNS, **VITS}  # input x [N, 3, 64, 64]
ENCODERS = {"bert": bert, "distilbert": distilbert}


def build(name: str) -> nn.Module:
    """The named model in eval mode with seeded random weights."""
    torch.manual_seed(0)
    if name in IMAGES:
        model = IMAGES[name]()
        if name in CNNS and name != "resnet":
            randomize_batchnorm(model)
    else:
        model = ENCODERS[name]()
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.Linear):
                    m.weight.copy_(INIT_STD * torch.randn(m.weight.shape, generator=g))
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
    return model.eval()


def example_inputs(name: str) -> tuple[torch.Tensor, ...]:
    """Inputs of batch 2 (dynamo specializes a batch of 1)."""
    g = torch.Generator().manual_seed(0)
    if name in IMAGES:
        return (torch.randn(2, 3, 64, 64, generator=g),)
    return torch.randint(0, 100, (2, 16), generator=g), torch.ones(2, 16, dtype=torch.long)


def export(name: str, exporter: str, opset: int, path: str) -> None:
    """Export ``name`` with TorchScript (``"ts"``, ``dynamo=False``) or dynamo (``"dynamo"``) at ``opset``, batch
    (and sequence) dimensions dynamic."""
    if exporter == "dynamo":
        import importlib.util

        import pytest

        if importlib.util.find_spec("onnxscript") is None:
            pytest.skip("torch's dynamo exporter needs onnxscript (pip install onnxscript); fp8ort itself does not")
    model, args = build(name), example_inputs(name)
    image = name in IMAGES
    input_names = ["x"] if image else ["input_ids", "attention_mask"]
    output_names = ["y"] if image else ["last_hidden_state"]
    kwargs: dict = {"input_names": input_names, "output_names": output_names, "opset_version": opset}
    if exporter == "ts":
        axes = {0: "N"} if image else {0: "N", 1: "S"}
        kwargs["dynamic_axes"] = {n: axes for n in input_names}
        kwargs["dynamo"] = False
    else:
        batch = torch.export.Dim("batch", max=1024)
        if image:
            kwargs["dynamic_shapes"] = ({0: batch},)
        else:
            seq = torch.export.Dim("seq", max=64)
            kwargs["dynamic_shapes"] = ({0: batch, 1: seq}, {0: batch, 1: seq})
        kwargs["dynamo"] = True
        kwargs["verbose"] = False
    with torch.no_grad():
        torch.onnx.export(model, args, path, **kwargs)
