"""Mutations of ONNX models for the fuzzers: raw byte edits of a serialized model, and structured edits of a
``ModelProto`` (hostile attributes, shapes, element types, rewired nodes) driven by the fuzzer's bytes.

A fuzz input is ``MODE || BODY``: an even MODE byte takes BODY as the model's bytes; an odd one applies the
structured edits that BODY encodes to one of the target's seed models (MODE's bits 2-7 pick it). Both read the
same way under atheris and under the plain random loop of ``_driver.py``, so a crasher found by either replays
with the other.
"""

from __future__ import annotations

import random

import onnx
from onnx import TensorProto

# Values that break arithmetic: zero, signs, int32/int64 edges, products that overflow.
INTS = [0, 1, -1, 2, 3, 7, 255, 2**16, 2**31 - 1, 2**31, -(2**31), 2**40, 2**62, 2**63 - 1, -(2**63)]
FLOATS = [0.0, -0.0, 1.0, -1.0, 1e-45, 1e-38, 3.4e38, float("inf"), float("-inf"), float("nan"), 448.0, 57344.0]
STRINGS = [b"", b"NHWC", b"NCHW", b"Relu", b"Clip", b"Gelu", b"Mish", b"\xff\xfe", b"x" * 300]
OP_TYPES = [
    "FP8Conv",
    "FP8MatMul",
    "FP8Quantize",
    "FP8Dequantize",
    "Conv",
    "MatMul",
    "Gemm",
    "Relu",
    "Add",
    "MaxPool",
    "Flatten",
    "QuantizeLinear",
    "DequantizeLinear",
    "NoSuchOp",
]
DOMAINS = ["", "com.fp8ort", "com.microsoft", "ai.onnx", "no.such.domain"]
ELEM_TYPES = list(range(0, 27))  # every TensorProto.DataType value and a few past the last
DIMS = [0, 1, 2, 3, 8, -1, 2**20, 2**31 - 1, 2**62]


class ByteSource:
    """Choices read from the fuzzer's bytes; zeros once they run out (so every input decodes)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos] if self.pos < len(self.data) else 0
        self.pos += 1
        return b

    def left(self) -> int:
        return max(0, len(self.data) - self.pos)

    def pick(self, seq):
        return seq[self.byte() % len(seq)] if seq else None

    def small(self, n: int) -> int:
        return self.byte() % n if n > 0 else 0


def mutate_bytes(data: bytes, rnd: random.Random, max_edits: int = 8) -> bytes:
    """Random byte-level edits: flips, interesting bytes, inserts, deletes, duplicated chunks, truncation."""
    buf = bytearray(data)
    for _ in range(rnd.randint(1, max_edits)):
        kind = rnd.randrange(6)
        if not buf:
            buf.extend(rnd.randbytes(rnd.randint(1, 16)))
            continue
        i = rnd.randrange(len(buf))
        if kind == 0:
            buf[i] ^= 1 << rnd.randrange(8)
        elif kind == 1:
            buf[i] = rnd.choice([0, 1, 0x7F, 0x80, 0xFF, rnd.randrange(256)])
        elif kind == 2:
            buf[i:i] = rnd.randbytes(rnd.randint(1, 8))
        elif kind == 3:
            del buf[i : i + rnd.randint(1, 16)]
        elif kind == 4:
            j = rnd.randrange(len(buf))
            buf[i:i] = buf[j : j + rnd.randint(1, 32)]
        else:
            del buf[rnd.randint(i, len(buf)) :]
    return bytes(buf)


def _edit_attribute(attr: onnx.AttributeProto, src: ByteSource) -> None:
    t = attr.type
    if t == onnx.AttributeProto.INT:
        attr.i = src.pick(INTS)
    elif t == onnx.AttributeProto.INTS:
        n = src.small(6)
        del attr.ints[:]
        attr.ints.extend(src.pick(INTS) for _ in range(n))
    elif t == onnx.AttributeProto.FLOAT:
        attr.f = src.pick(FLOATS)
    elif t == onnx.AttributeProto.FLOATS:
        del attr.floats[:]
        attr.floats.extend(src.pick(FLOATS) for _ in range(src.small(5)))
    elif t == onnx.AttributeProto.STRING:
        attr.s = src.pick(STRINGS)
    else:
        attr.type = src.pick([onnx.AttributeProto.INT, onnx.AttributeProto.INTS, onnx.AttributeProto.STRING])


def _edit_tensor(t: onnx.TensorProto, src: ByteSource) -> None:
    kind = src.small(5)
    if kind == 0 and t.dims:
        t.dims[src.small(len(t.dims))] = src.pick(DIMS)
    elif kind == 1:
        t.dims.append(src.pick(DIMS[:5]))
    elif kind == 2 and t.dims:
        del t.dims[-1]
    elif kind == 3:
        t.data_type = src.pick(ELEM_TYPES)
    elif t.raw_data:
        t.raw_data = t.raw_data[: src.small(len(t.raw_data) + 1)]


def _edit_value_info(v: onnx.ValueInfoProto, src: ByteSource) -> None:
    tt = v.type.tensor_type
    kind = src.small(4)
    if kind == 0:
        tt.elem_type = src.pick(ELEM_TYPES)
    elif kind == 1 and tt.shape.dim:
        d = tt.shape.dim[src.small(len(tt.shape.dim))]
        if src.byte() % 4 == 0:
            d.dim_param = "n"
        else:
            d.dim_value = src.pick(DIMS)
    elif kind == 2:
        tt.shape.dim.add().dim_value = src.pick(DIMS[:5])
    elif tt.shape.dim:
        del tt.shape.dim[-1]


def _edit_node(node: onnx.NodeProto, names: list[str], src: ByteSource) -> None:
    kind = src.small(7)
    if kind <= 2 and node.attribute:
        _edit_attribute(node.attribute[src.small(len(node.attribute))], src)
    elif kind == 3:
        name = src.pick(
            [
                b"pads",
                b"strides",
                b"dilations",
                b"group",
                b"activation",
                b"output_dtype",
                b"transB",
                b"layout",
                b"saturate",
                b"kernel_shape",
                b"activation_alpha",
                b"axis",
            ]
        ).decode()
        attr = node.attribute.add()
        attr.name = name
        attr.type = src.pick(
            [onnx.AttributeProto.INT, onnx.AttributeProto.INTS, onnx.AttributeProto.FLOAT, onnx.AttributeProto.STRING]
        )
        _edit_attribute(attr, src)
    elif kind == 4 and node.input:
        node.input[src.small(len(node.input))] = src.pick(names + ["", "no_such_tensor"])
    elif kind == 5:
        if node.input and src.byte() % 2:
            del node.input[-1]
        else:
            node.input.append(src.pick(names + [""]))
    else:
        if src.byte() % 2:
            node.op_type = src.pick(OP_TYPES)
        else:
            node.domain = src.pick(DOMAINS)


def mutate_model(seed: onnx.ModelProto, body: bytes) -> bytes:
    """The seed model with the structured edits ``body`` encodes (one edit per 3-4 bytes, 16 at most)."""
    m = onnx.ModelProto()
    m.CopyFrom(seed)
    src = ByteSource(body)
    g = m.graph
    for _ in range(16):
        if src.left() == 0:
            break
        names = [t.name for t in g.initializer] + [v.name for v in g.input] + [o for n in g.node for o in n.output]
        target = src.small(8)
        if target <= 3 and g.node:
            _edit_node(g.node[src.small(len(g.node))], names, src)
        elif target == 4 and g.initializer:
            _edit_tensor(g.initializer[src.small(len(g.initializer))], src)
        elif target == 5 and g.input:
            _edit_value_info(g.input[src.small(len(g.input))], src)
        elif target == 6 and g.output:
            _edit_value_info(g.output[src.small(len(g.output))], src)
        else:
            which = src.small(3)
            if which == 0 and m.opset_import:
                m.opset_import[src.small(len(m.opset_import))].version = src.pick([1, 7, 13, 19, 21, 26, 1000])
            elif which == 1:
                m.ir_version = src.pick([0, 3, 7, 10, 11, 100])
            elif g.node:
                del g.node[src.small(len(g.node))]
    return m.SerializeToString()


def model_bytes(seeds: onnx.ModelProto | list[onnx.ModelProto], data: bytes) -> bytes:
    """The model a fuzz input stands for (see the module's docstring); with several seed models, MODE's bits 2-7
    pick the one the structured edits apply to."""
    if not data:
        return b""
    if data[0] % 2 == 0:
        return data[1:]
    seeds = seeds if isinstance(seeds, list) else [seeds]
    return mutate_model(seeds[(data[0] >> 2) % len(seeds)], data[1:])


def random_input(seed_bytes: bytes, rnd: random.Random) -> bytes:
    """A fresh input for the plain random loop: raw bytes of the seed mutated, or random structured edits."""
    route = rnd.choice([0, 2])  # bit 1: the target's second route (quantizer: from a file; native: the EP)
    if rnd.random() < 0.3:  # most byte edits break the protobuf encoding: fewer of them
        return bytes([route]) + mutate_bytes(seed_bytes, rnd)
    return bytes([rnd.randrange(64) << 2 | route | 1]) + rnd.randbytes(rnd.randint(3, 64))


_ = TensorProto  # the element type values above are TensorProto.DataType's
