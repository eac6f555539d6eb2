"""The rewrite half of the rules: emit matched groups as ``com.fp8ort`` ops or as standard FP8 QDQ.

Both emitters take the same plan (groups, per-tensor activation ranges, the set of FP8 outputs), so the QDQ
model is also the emulation of the fp8ort model that the report and the accuracy-target search run on ORT: it keeps
the original float ops of each group (the bias Add, the residual Add, the activation or its decomposition) after the
DequantizeLinear'd operands, which computes ``act(conv + B + deq(Z))`` as the fused op does.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import onnx_ir.passes.common

from .. import numerics as nx
from .attention import Fp8AttentionPass
from .config import QuantizeConfig
from .embedding import FoldConstantLookupPass
from .layernorm import Fp8LayerNormPass
from .layout import Fp8MaxPoolPass, SinkLayoutTransposesPass
from .mask import DropMaskExpandPass
from .pooling import rewrite_pooling
from .prepare import is_std, new_initializer
from .qkv import Float16QkvPass, PackQkvPass, SplitQkvHeadsPass
from .rules import Group, fp8_outputs, pooled_fp8_outputs
from .shared_input import ShareInputQuantizePass

DOMAIN = "com.fp8ort"
TO_NHWC = [0, 2, 3, 1]
TO_NCHW = [0, 3, 1, 2]


def weight_scale(g: Group, fmt: nx.FP8Format) -> np.ndarray:
    """Per-output-channel scale amax / fp8_max (1 for all-zero channels)."""
    axis = g.channel_axis
    other = tuple(i for i in range(g.weight.ndim) if i != axis)
    amax = np.max(np.abs(g.weight), axis=other)
    return nx.compute_scale(amax, fmt)


def _channel_shape(g: Group) -> list[int]:
    shape = [1] * g.weight.ndim
    shape[g.channel_axis] = -1
    return shape


def quantized_weight(g: Group, fmt: nx.FP8Format) -> tuple[np.ndarray, np.ndarray]:
    """The FP8 weight and its per-channel scale (computed once per group and kept in ``g.fp8_weight``)."""
    if g.fp8_weight is None or g.fp8_weight[0].dtype != fmt.dtype:
        s = weight_scale(g, fmt)
        g.fp8_weight = (nx.quantize(g.weight, s.reshape(_channel_shape(g)), fmt), s)
    return g.fp8_weight


def correct_bias(g: Group, fmt: nx.FP8Format, x_mean: np.ndarray) -> None:
    """Bias correction: subtract the mean output shift ``(Wq - W) @ E[x]`` that FP8 weight rounding causes.

    ``x_mean`` is the per-channel mean of the layer's input over the calibration data (channel axis 1 for Conv,
    the last axis for Gemm/MatMul). FP8 rounding errors of a channel's weights do not cancel when its inputs have a
    large mean (post-ReLU6 activations, depthwise filters); this removes that systematic part. MatMul groups without
    a bias Add are left alone (the QDQ form would need a new Add).
    """
    if g.kind == "MatMul" and g.bias is None:
        return
    wq, ws = quantized_weight(g, fmt)
    dw = nx.dequantize(wq, ws.reshape(_channel_shape(g))).astype(np.float64) - g.weight
    mu = np.asarray(x_mean, dtype=np.float64).reshape(-1)
    if g.kind == "Conv":
        groups = int(g.conv.group)
        m, c_per_group = dw.shape[:2]
        if mu.size != groups * c_per_group:
            return
        mu_out = np.repeat(mu.reshape(groups, c_per_group), m // groups, axis=0)  # [M, C/group]
        delta = np.sum(dw.sum(axis=(2, 3)) * mu_out, axis=1)
    else:
        w = dw.T if g.trans_b else dw  # [K, N]
        if mu.size != w.shape[0]:
            return
        delta = mu @ w
    if not np.all(np.isfinite(delta)):
        return
    g.float_bias = g.bias
    base = np.zeros(delta.shape) if g.bias is None else g.bias.astype(np.float64)
    g.bias = (base - delta).astype(np.float32)


class _Emitter:
    def __init__(
        self,
        model: ir.Model,
        groups: list[Group],
        amax: dict[str, float],
        config: QuantizeConfig,
        switches: bool = False,
        float_z: frozenset[str] = frozenset(),
        observed_max: dict[str, float] | None = None,
    ) -> None:
        self.model, self.graph, self.groups, self.config = model, model.graph, groups, config
        self.switches = switches
        self.fmt = config.fp8
        self.amax = amax
        self.observed_max = observed_max or {}  # max |x| seen in calibration (amax may be a clipped range)
        self.fp8_out = fp8_outputs(groups, config, float_z)
        # conv outputs read by spatial means and squeeze-excitation gates that go FP8 too (both emitters agree)
        self.pooling = pooled_fp8_outputs(groups, config, float_z, self.fp8_out)
        self.pooled = self.pooling.outputs
        self.fp8_out |= set(self.pooled)
        self._scales: dict[str, ir.Value] = {}

    def act_scale(self, name: str) -> ir.Value:
        """The (shared) scale initializer of a calibrated activation (a power of two with ``power_of_two_scales``)."""
        if name not in self._scales:
            amax = np.float32(self.amax.get(name, 0.0))
            s = nx.compute_scale(amax, self.fmt, self.config.power_of_two_scales).reshape(())
            self._scales[name] = new_initializer(self.graph, f"{name}.scale", s)
        return self._scales[name]

    def init(self, name: str, array: np.ndarray) -> ir.Value:
        return new_initializer(self.graph, name, array)

    def finish(self) -> None:
        ir.passes.common.RemoveUnusedNodesPass()(self.model)


class FoldLayoutTransposesPass(ir.passes.InPlacePass):
    """Cancel a layout Transpose the emitter inserted against a Transpose next to it that undoes it.

    A model that permutes a convolution's output to channels-last itself (ConvNeXt's ``permute(0, 2, 3, 1)``)
    would otherwise get NHWC -> NCHW -> NHWC: the pair composes to the identity, and its consumers read the NHWC
    tensor directly.
    """

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for t2 in list(model.graph):
            t1 = t2.inputs[0].producer() if is_std(t2, "Transpose") and t2.inputs[0] is not None else None
            if not is_std(t1, "Transpose") or not (_is_layout_transpose(t1) or _is_layout_transpose(t2)):
                continue
            p1, p2 = _perm(t1), _perm(t2)
            if p1 is None or p2 is None or len(p1) != len(p2) or [p1[i] for i in p2] != list(range(len(p1))):
                continue
            out = t2.outputs[0]
            if out.is_graph_output():
                continue
            ir.convenience.replace_all_uses_with(out, t1.inputs[0])
            model.graph.remove(t2, safe=True)
            if not t1.outputs[0].uses() and not t1.outputs[0].is_graph_output():
                model.graph.remove(t1, safe=True)
            modified = True
        return ir.passes.PassResult(model, modified)


def _is_layout_transpose(node: ir.Node) -> bool:
    return (node.name or "").endswith((".to_nhwc", ".to_nchw"))


def _perm(node: ir.Node) -> list[int] | None:
    attr = node.attributes.get("perm")
    return None if attr is None else list(attr.as_ints())


class Fp8OrtEmitter(_Emitter):
    """Rewrite each quantized group into one FP8Conv / FP8MatMul node."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.nhwc: dict[int, ir.Value] = {}  # id(NCHW value) -> the same tensor in NHWC

    def finish(self) -> None:
        nhwc = self.config.layout == "NHWC"
        rewrite_pooling(self.graph, self.pooling, self.act_scale, self.to_nhwc, nhwc)  # before the layout passes
        if nhwc:
            SinkLayoutTransposesPass()(self.model)
            FoldLayoutTransposesPass()(self.model)
            if self.config.fp8_activations:  # FP8 tensors between the ops: a MaxPool between NHWC convs joins them
                Fp8MaxPoolPass()(self.model)
        if self.config.fuse_attention:  # multi-head attention blocks become FP8Attention (dead shape code goes below)
            SplitQkvHeadsPass()(self.model)  # a vision transformer's qkv.unbind(0): the head split of each tensor
            Fp8AttentionPass(fp8_output=self.config.fp8_activations)(self.model)
            DropMaskExpandPass()(self.model)  # FP8Attention broadcasts the mask: its Expand and shape nodes go
            PackQkvPass()(self.model)  # the Q, K and V projections of one input: one FP8MatMul, the packed form
            if self.config.attention_float16:  # those projections write float16 where their range fits
                Float16QkvPass(self.observed_max)(self.model)
        FoldConstantLookupPass()(self.model)  # a lookup with constant ids (token types) folds into the word table
        if self.config.fp8_activations:  # a float tensor several FP8 ops quantize alike: one FP8Quantize for all
            ShareInputQuantizePass()(self.model)
            Fp8LayerNormPass()(self.model)  # a LayerNormalization writes the FP8 copy those readers take
        super().finish()

    def to_nhwc(self, v: ir.Value) -> ir.Value:
        """``v`` in NHWC: the existing NHWC twin, or a new Transpose right after v's producer (every later
        consumer can share it)."""
        if id(v) in self.nhwc:
            return self.nhwc[id(v)]
        out = ir.Value(name=f"{v.name}.nhwc", type=v.type, shape=_permute(v.shape, TO_NHWC))
        node = ir.Node("", "Transpose", [v], [ir.AttrInt64s("perm", TO_NHWC)], outputs=[out], name=f"{v.name}.to_nhwc")
        producer = v.producer()
        if producer is not None and producer.graph is self.graph:
            self.graph.insert_after(producer, node)
        else:  # a graph input or an initializer
            self.graph.insert_before(next(iter(self.graph)), node)
        self.nhwc[id(v)] = out
        return out

    def _weight_inputs(self, g: Group) -> list[ir.Value | None]:
        """W, w_scale and B initializers."""
        wq, ws = quantized_weight(g, self.fmt)
        bias = None if g.bias is None else self.init(f"{g.name}.bias", g.bias)
        return [self.init(f"{g.name}.weight_fp8", wq), self.init(f"{g.name}.w_scale", ws), bias]

    def _operands(self, g: Group, nhwc: bool) -> tuple[ir.Value, ir.Value | None, ir.Value | None]:
        """X, Z and z_scale in the op's layout (z_scale only for an FP8 Z)."""
        x = self.to_nhwc(g.x) if nhwc else g.x
        z, z_scale = g.z, None
        if z is not None:
            if nhwc:
                z = self.to_nhwc(z)
            if g.z.name in self.fp8_out:  # its producer may come later in graph order and is not rewritten yet
                z_scale = self.act_scale(g.z.name)
        return x, z, z_scale

    def _attributes(self, g: Group, out_type: int, nhwc: bool) -> list[ir.Attr]:
        attrs = g.activation.attributes()
        attrs.append(ir.AttrInt64("output_dtype", out_type))
        if g.conv is not None:
            attrs += [
                ir.AttrInt64s("strides", list(g.conv.strides)),
                ir.AttrInt64s("pads", list(g.conv.pads)),
                ir.AttrInt64s("dilations", list(g.conv.dilations)),
                ir.AttrInt64("group", g.conv.group),
                ir.AttrString("layout", "NHWC" if nhwc else "NCHW"),
            ]
        else:
            attrs.append(ir.AttrInt64("transB", int(g.trans_b)))
        return attrs

    def emit(self, g: Group) -> None:
        nhwc = self.config.layout == "NHWC" and g.kind == "Conv"
        old = g.output
        out_fp8 = old.name in self.fp8_out
        out_type = self.fmt.onnx_type if out_fp8 else int(ir.DataType.FLOAT)
        x, z, z_scale = self._operands(g, nhwc)
        w, w_scale, bias = self._weight_inputs(g)
        inputs = [
            x,
            w,
            self.act_scale(g.x.name),
            w_scale,
            bias,
            z,
            z_scale,
            self.act_scale(old.name) if out_fp8 else None,
        ]
        while inputs[-1] is None:
            inputs.pop()
        y = ir.Value(
            name=f"{old.name}.fp8ort",
            type=ir.TensorType(ir.DataType(out_type)),
            shape=_permute(old.shape, TO_NHWC) if nhwc else old.shape,
        )
        node = ir.Node(DOMAIN, g.op_type, inputs, self._attributes(g, out_type, nhwc), outputs=[y], name=g.name)
        self._replace(g, node, y, nhwc, out_fp8)

    def _replace(self, g: Group, node: ir.Node, y: ir.Value, nhwc: bool, out_fp8: bool) -> None:
        """Put ``node`` in place of the group's nodes; an NHWC float output gets a Transpose back to NCHW."""
        old = g.output
        new_nodes = [node]
        final = y
        if nhwc and not out_fp8:
            final = ir.Value(name=f"{old.name}.nchw", type=old.type, shape=old.shape)
            new_nodes.append(
                ir.Node(
                    "", "Transpose", [y], [ir.AttrInt64s("perm", TO_NCHW)], outputs=[final], name=f"{g.name}.to_nchw"
                )
            )
        self.graph.insert_before(g.nodes[-1], new_nodes)
        name = old.name
        pending = self.nhwc.pop(id(old), None)
        if pending is not None:
            # A consumer earlier in graph order (a residual Add fed by a downsample conv) asked for this value
            # in NHWC before its producer was rewritten: hand it the new output directly when that is NHWC.
            transpose = pending.producer()
            if nhwc:
                ir.convenience.replace_all_uses_with(pending, y)
                self.graph.remove(transpose, safe=True)
            else:
                pending.type = final.type
        ir.convenience.replace_all_uses_with(old, final, replace_graph_outputs=True)
        base = node.name
        for n in g.nodes:
            n.name = f"{n.name}.replaced"
        node.name = base
        self.graph.remove(g.nodes, safe=True)
        final.name = name
        if nhwc:
            self.nhwc[id(final)] = y
            if final is not y:
                y.name = f"{name}.nhwc"


class QdqEmitter(_Emitter):
    """Standard QuantizeLinear/DequantizeLinear around the original (BN-folded) float ops.

    With ``switches`` (the sensitivity model of the accuracy-target search) each group also gets a float scalar
    graph input ``<group>.fp8_switch``: every quantized operand becomes ``f + s * (q - f)``, so one session
    evaluates any choice of FP8 layers (1 = FP8, 0 = float) without rebuilding the model.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.qdq: dict[int, ir.Value] = {}
        self.switches_of: dict[str, ir.Value] = {}  # group name -> its switch input
        self._z_switch: dict[str, ir.Value] = {}  # residual value name -> its combined switch

    def z_groups(self, z: ir.Value) -> list[str]:
        """The groups whose FP8 state decides whether the residual input ``z`` is FP8 in a real build: its producer
        and every group reading it (``rules.fp8_outputs`` keeps a group output FP8 only when all of these are FP8;
        ``rules.pooled_fp8_outputs`` also needs the gates' producers and readers)."""
        if z.name in self.pooled:
            return self.pooled[z.name].depends
        names = [g.name for g in self.groups if g.quantized and g.output is z]
        for g in self.groups:
            if not g.quantized:
                continue
            reads_x = g.x is z
            reads_z = g.residual is not None and g.z is z
            if (reads_x or reads_z) and g.name not in names:
                names.append(g.name)
        return names

    def z_switch(self, z: ir.Value) -> ir.Value:
        """The product of the switches of ``z_groups(z)``: 1 exactly when the real build quantizes ``z``."""
        if z.name not in self._z_switch:
            sws = [self.switches_of[n] if n in self.switches_of else self.switch_by_name(n) for n in self.z_groups(z)]
            out = sws[0]
            for i, s in enumerate(sws[1:]):
                prod = ir.Value(name=f"{z.name}.z_switch{i}", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([]))
                # it reads graph inputs only: first in the graph, so any later reader of z (in any order) sees it
                self.graph.insert_before(
                    next(iter(self.graph)), ir.Node("", "Mul", [out, s], outputs=[prod], name=f"{prod.name}.Mul")
                )
                out = prod
            self._z_switch[z.name] = out
        return self._z_switch[z.name]

    def switch_by_name(self, name: str) -> ir.Value:
        """The switch input of group ``name`` (created on first use, before that group is emitted)."""
        if name not in self.switches_of:
            v = ir.Value(name=f"{name}.fp8_switch", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([]))
            self.graph.inputs.append(v)
            self.switches_of[name] = v
        return self.switches_of[name]

    def quant_dequant(self, v: ir.Value, before: ir.Node) -> ir.Value:
        """``DequantizeLinear(QuantizeLinear(v))`` with v's activation scale (one pair per value)."""
        if id(v) in self.qdq:
            return self.qdq[id(v)]
        nodes, dq = self._qdq_nodes(v, v.name)
        self.graph.insert_before(before, nodes)
        self.qdq[id(v)] = dq
        return dq

    def _qdq_nodes(self, v: ir.Value, prefix: str) -> tuple[list[ir.Node], ir.Value]:
        """``QuantizeLinear -> DequantizeLinear`` of ``v`` with its activation scale (not inserted yet)."""
        s = self.act_scale(v.name)
        q = ir.Value(name=f"{prefix}.q", type=ir.TensorType(ir.DataType(self.fmt.onnx_type)), shape=v.shape)
        dq = ir.Value(name=f"{prefix}.dq", type=v.type, shape=v.shape)
        # No zero point: the FP8 type goes in output_dtype (opset 21). With an FP8 zero point, onnxruntime 1.32's
        # Relu+QuantizeLinear fusion drops the Relu as if FP8 could not hold negative values.
        nodes = [
            ir.Node(
                "",
                "QuantizeLinear",
                [v, s],
                [ir.AttrInt64("output_dtype", self.fmt.onnx_type)],
                outputs=[q],
                name=f"{prefix}.QuantizeLinear",
            ),
            ir.Node("", "DequantizeLinear", [q, s], outputs=[dq], name=f"{prefix}.DequantizeLinear"),
        ]
        return nodes, dq

    def switch(self, g: Group) -> ir.Value:
        return self.switch_by_name(g.name)

    @staticmethod
    def _blend_nodes(f: ir.Value, q: ir.Value, s: ir.Value) -> tuple[list[ir.Node], ir.Value]:
        """``f + s * (q - f)`` (not inserted yet)."""
        d = ir.Value(name=f"{q.name}.{s.name}.d", type=f.type)
        sd = ir.Value(name=f"{q.name}.{s.name}.sd", type=f.type)
        out = ir.Value(name=f"{q.name}.{s.name}.out", type=f.type, shape=f.shape)
        nodes = [
            ir.Node("", "Sub", [q, f], outputs=[d], name=f"{d.name}.Sub"),
            ir.Node("", "Mul", [d, s], outputs=[sd], name=f"{sd.name}.Mul"),
            ir.Node("", "Add", [f, sd], outputs=[out], name=f"{out.name}.Add"),
        ]
        return nodes, out

    def blend(self, f: ir.Value, q: ir.Value, s: ir.Value, before: ir.Node) -> ir.Value:
        """``f + s * (q - f)`` inserted before ``before``."""
        nodes, out = self._blend_nodes(f, q, s)
        self.graph.insert_before(before, nodes)
        return out

    def _weight(self, g: Group, sw: ir.Value | None) -> ir.Value:
        """The dequantized FP8 weight (blended with the float one under a switch)."""
        a = g.anchor
        wq, ws = quantized_weight(g, self.fmt)
        if sw is None:
            wd = ir.Value(name=f"{g.name}.weight_dq", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape(wq.shape))
            dq = ir.Node(
                "",
                "DequantizeLinear",
                [self.init(f"{g.name}.weight_fp8", wq), self.init(f"{g.name}.w_scale", ws)],
                [ir.AttrInt64("axis", g.channel_axis)],
                outputs=[wd],
                name=f"{g.name}.weight.DequantizeLinear",
            )
            self.graph.insert_before(a, dq)
            return wd
        wd = self.init(f"{g.name}.weight_dq", nx.dequantize(wq, ws.reshape(_channel_shape(g))))
        return self.blend(self.init(f"{g.name}.weight_float", g.weight), wd, sw, a)

    def _bias(self, g: Group, sw: ir.Value | None, before: ir.Node) -> ir.Value:
        b = self.init(f"{g.name}.bias", g.bias)
        if sw is not None:
            fb = g.float_bias if g.float_bias is not None else np.zeros_like(g.bias)
            b = self.blend(self.init(f"{g.name}.bias_float", fb), b, sw, before)
        return b

    def emit(self, g: Group) -> None:
        a = g.anchor
        sw = self.switch(g) if self.switches else None
        if g.output.name in self.pooled:  # before the bias Add goes: the output still has its calibrated name
            self._quantize_pooled(g)
        x = self.quant_dequant(g.x, a)
        if sw is not None:
            x = self.blend(g.x, x, sw, a)
        a.replace_input_with(0, x)
        a.replace_input_with(1, self._weight(g, sw))
        if g.kind == "Gemm":
            a.attributes.pop("alpha", None)
            a.attributes.pop("beta", None)
        if g.fused_bias and g.kind != "MatMul":
            # the bias Add's constant is part of g.bias now (the anchor's own bias input): bypass the Add. The
            # anchor's output takes the Add's name, which the calibration, the report and the readers' scales use
            add = g.nodes[1]
            y, name = add.outputs[0], add.outputs[0].name
            ir.convenience.replace_all_uses_with(y, a.outputs[0], replace_graph_outputs=True)
            self.graph.remove(add, safe=True)
            g.nodes.remove(add)
            y.name = f"{name}.bypassed"
            a.outputs[0].name = name
        if g.kind in ("Conv", "Gemm") and g.bias is not None:
            if len(a.inputs) < 3:
                a.resize_inputs(3)
            a.replace_input_with(2, self._bias(g, sw, a))
        elif g.kind == "MatMul" and g.fused_bias:
            add = g.nodes[1]
            add.replace_input_with(1 if add.inputs[0] is a.outputs[0] else 0, self._bias(g, sw, add))
        if g.residual is not None and g.z.name in self.fp8_out:
            add, idx = g.residual
            z = self.quant_dequant(g.z, add)
            if sw is not None:
                # not this group's switch alone: a real build has Z in FP8 only while its producer and all its
                # readers are FP8 (rules.fp8_outputs), so the switch model must not quantize it otherwise
                z = self.blend(g.z, z, self.z_switch(g.z), add)
            add.replace_input_with(idx, z)

    def _quantize_pooled(self, g: Group) -> None:
        """Q/DQ of the group's output right after it, read by the pools and gates that take it in FP8 (blended
        with the switch product of ``z_groups``: a real build quantizes it only when all those groups are FP8)."""
        x = g.output
        nodes, out = self._qdq_nodes(x, f"{x.name}.pooled")
        if self.switches:
            more, out = self._blend_nodes(x, out, self.z_switch(x))
            nodes += more
        self.graph.insert_after(g.nodes[-1], nodes)
        p = self.pooled[x.name]
        for node in p.pools + [c.node for c in p.gates]:
            for i, v in enumerate(node.inputs):
                if v is x:
                    node.replace_input_with(i, out)


def _permute(shape: ir.Shape | None, perm: list[int]) -> ir.Shape | None:
    if shape is None or len(shape) != len(perm):
        return shape
    return ir.Shape([shape[p] for p in perm])


def emit(
    model: ir.Model,
    groups: list[Group],
    amax: dict[str, float],
    config: QuantizeConfig,
    fmt: str,
    switches: bool = False,
    float_z: frozenset[str] = frozenset(),
    observed_max: dict[str, float] | None = None,
) -> ir.Model:
    """Rewrite ``model`` in place (its ``groups`` matched on it) into format ``fp8ort`` or ``qdq``
    (``switches``: the QDQ sensitivity model with one FP8 on/off input per group, see :class:`QdqEmitter`;
    ``float_z``: groups whose residual input stays high precision; ``observed_max``: the largest ``|x|`` calibration
    saw of each calibrated tensor, which decides where attention's Q, K and V may be float16)."""
    emitter = (Fp8OrtEmitter if fmt == "fp8ort" else QdqEmitter)(
        model, groups, amax, config, switches, float_z, observed_max
    )
    for g in groups:
        if g.quantized:
            emitter.emit(g)
    emitter.finish()
    if fmt == "fp8ort" and any(g.quantized for g in groups):
        model.opset_imports[DOMAIN] = 1
        model.graph.opset_imports[DOMAIN] = 1
    model.ir_version = max(model.ir_version or 0, 10)
    return model
