"""``fp8ort.quantize``: load, prepare (prepare.py), match (rules.py), calibrate, decide, rewrite, check, report."""

from __future__ import annotations

import collections
import os
import time
from typing import Any, Literal, overload

import numpy as np
import onnx
import onnx_ir as ir

from .. import numerics as nx
from . import calibration as cal
from . import model_io as mio
from .attention import ATTENTION_INFO_KEY, ATTENTION_NODES_KEY, ATTENTION_REASON_KEY
from .config import METADATA_KEY, QuantizeConfig
from .errors import QuantizeError
from .layernorm import LAYERNORM_INFO_KEY, LAYERNORM_REASON_KEY
from .layout import POOL_REASON_KEY
from .pooling import POOLING_REASON_KEY
from .prepare import prepare
from .report import NodeReport, QuantizeReport, SqnrAccumulator
from .rewrite import correct_bias, emit
from .rules import ANCHOR_OPS, Group, is_weight_layer, match_groups, node_macs, shape_of

REPORT_SAMPLES = 8  # calibration samples on which the report measures per-layer SQNR (float outputs cached)


@overload
def quantize(
    model: ir.Model,
    output: str | os.PathLike | None = None,
    *,
    calibration_data: Any = None,
    config: QuantizeConfig | None = None,
    return_report: Literal[False] = False,
    external_data: bool | None = None,
    progress: bool | None = None,
) -> ir.Model: ...


@overload
def quantize(
    model: str | os.PathLike | onnx.ModelProto,
    output: str | os.PathLike | None = None,
    *,
    calibration_data: Any = None,
    config: QuantizeConfig | None = None,
    return_report: Literal[False] = False,
    external_data: bool | None = None,
    progress: bool | None = None,
) -> onnx.ModelProto: ...


@overload
def quantize(
    model: ir.Model,
    output: str | os.PathLike | None = None,
    *,
    calibration_data: Any = None,
    config: QuantizeConfig | None = None,
    return_report: Literal[True],
    external_data: bool | None = None,
    progress: bool | None = None,
) -> tuple[ir.Model, QuantizeReport]: ...


@overload
def quantize(
    model: str | os.PathLike | onnx.ModelProto,
    output: str | os.PathLike | None = None,
    *,
    calibration_data: Any = None,
    config: QuantizeConfig | None = None,
    return_report: Literal[True],
    external_data: bool | None = None,
    progress: bool | None = None,
) -> tuple[onnx.ModelProto, QuantizeReport]: ...


def quantize(
    model: mio.ModelLike,
    output: str | os.PathLike | None = None,
    *,
    calibration_data: Any = None,
    config: QuantizeConfig | None = None,
    return_report: bool = False,
    external_data: bool | None = None,
    progress: bool | None = None,
) -> ir.Model | onnx.ModelProto | tuple[ir.Model | onnx.ModelProto, QuantizeReport]:
    """Quantize a float ONNX model to FP8 (``com.fp8ort`` ops, or standard FP8 QDQ with ``format="qdq"``).

    Args:
        model: path of an ``.onnx`` file, an ``onnx.ModelProto`` or an ``onnx_ir.Model`` (not modified).
        output: where to write the quantized model (optional).
        calibration_data: an ``.npz`` path, a dict {input name: array with a leading sample axis}, a list of
            such dicts (one per batch) or an object with ``get_next()`` (onnxruntime ``CalibrationDataReader``).
        config: a :class:`QuantizeConfig`; defaults to max calibration of every Conv/Gemm/MatMul.
        return_report: also return the :class:`QuantizeReport` (as ``(model, report)``).
        external_data: write weights to ``<output>.data`` (default: only for models over 2 GB).
        progress: show a progress bar over calibration batches (default: when stderr is a terminal).

    Returns:
        The quantized model, of the same kind as the input (``ModelProto`` for a path); with
        ``return_report=True`` a tuple ``(model, report)``.

    Example::

        fp8ort.quantize("resnet50.onnx", "resnet50.fp8.onnx", calibration_data="calib.npz")
    """
    config = config or QuantizeConfig()
    if not isinstance(config, QuantizeConfig):
        raise QuantizeError(f"config must be a fp8ort.QuantizeConfig, not {type(config).__name__}")
    try:
        return _quantize(model, output, calibration_data, config, return_report, external_data, progress)
    except (QuantizeError, KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:  # a malformed model reached a pass (or onnxruntime) that does not check it
        raise QuantizeError(_unexpected_failure(model, exc)) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _unexpected_failure(model: mio.ModelLike, exc: Exception) -> str:
    """The message for an exception that is not a QuantizeError: whether onnx.checker rejects the model (then the
    model is the problem and the checker names it) or accepts it (then it is fp8ort's bug)."""
    try:
        if isinstance(model, ir.Model):
            model = ir.to_proto(model)
        onnx.checker.check_model(model if isinstance(model, onnx.ModelProto) else os.fspath(model), full_check=True)
    except Exception as check:  # noqa: BLE001 - any checker failure is the answer
        return (
            f"the model is not valid ONNX ({_first_line(check)}), and quantizing it failed with {_first_line(exc)}; "
            "fix the model (onnx.checker.check_model(model, full_check=True) names the problem) and quantize again"
        )
    return (
        f"quantizing failed with {_first_line(exc)} on a model that onnx.checker accepts: this is a bug in fp8ort, "
        "please report it with the model (or exclude the failing nodes with exclude_nodes meanwhile)"
    )


def _quantize(
    model: mio.ModelLike,
    output: str | os.PathLike | None,
    calibration_data: Any,
    config: QuantizeConfig,
    return_report: bool,
    external_data: bool | None,
    progress: bool | None,
) -> ir.Model | onnx.ModelProto | tuple[ir.Model | onnx.ModelProto, QuantizeReport]:
    t0 = time.perf_counter()
    plan = Plan(mio.load_model(model), config, progress)
    plan.calibrate(calibration_data)
    if config.accuracy_target_db is not None:
        from .sensitivity import search_float_layers

        search_float_layers(plan)
    quantized = plan.build(config.format, final=True)
    report = plan.make_report(quantized)
    report.seconds = time.perf_counter() - t0
    if output is not None:
        mio.save_model(quantized, output, external_data)
        report.output_path = str(output)
    result = quantized if isinstance(model, ir.Model) else ir.to_proto(quantized)
    return (result, report) if return_report else result


class Plan:
    """The prepared float model and every decision taken about it."""

    def __init__(self, model: ir.Model, config: QuantizeConfig, progress: bool | None) -> None:
        self.config, self.progress = config, progress
        prepared = prepare(model)
        self.float_model = prepared.model
        self.folded = prepared.folded
        self.scaled = prepared.scaled
        self.source_nodes = prepared.source_nodes
        self.notes: list[str] = [prepared.note()]
        matching = match_groups(self.float_model.graph, config)
        self.groups, self.skipped = matching.groups, matching.skipped
        self.subgraph_layers = _subgraph_layers(self.float_model.graph)
        if not self.groups and not any(is_weight_layer(n) for n in self.skipped) and not self.subgraph_layers:
            ops = collections.Counter(n.op_type for n in self.float_model.graph)
            present = ", ".join(f"{k} x{v}" for k, v in ops.most_common(8))
            anchors = [n for n in self.skipped if n.op_type in ANCHOR_OPS]
            raise QuantizeError(
                "the model has no weight layer: no Conv, Gemm or MatMul with a constant weight "
                f"({len(anchors)} Conv/Gemm/MatMul without one; ops: {present}); fp8ort quantizes only those layers. "
                "If the weights are graph inputs, export them as initializers (torch.onnx.export(..., "
                "export_params=True)); otherwise there is nothing to quantize in this model"
            )
        self.float_reason: dict[str, str] = {g.name: g.reason for g in self.groups if not g.quantized}
        self.sensitivity: dict[str, float] = {}
        self.kept_for_target: list[str] = []
        self.search_estimate_db: float | None = None  # the search's SQNR estimate of its final choice
        self.float_residuals: frozenset[str] = frozenset()  # groups whose residual input Z stays float (target)
        self.amax: dict[str, float] = {}
        self.observed_max: dict[str, float] = {}  # the largest finite |x| of each calibrated tensor (not clipped)
        self.x_mean: dict[str, np.ndarray] = {}  # per-channel mean of each group's input (bias correction)
        self.feeds: list[cal.Feed] = []
        self.float_cache: list[dict[str, Any]] = []
        self.skipped_macs: dict[str, int | None] = {}
        self.fp8_weights: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def input_specs(self) -> list[cal.InputSpec]:
        init_names = set(self.float_model.graph.initializers)
        specs = []
        for v in self.float_model.graph.inputs:
            if v.name in init_names:
                continue
            dt = (
                nx.onnx_to_numpy_dtype(int(v.dtype))
                if int(v.dtype) in nx.HIGH_PRECISION
                else onnx.helper.tensor_dtype_to_np_dtype(int(v.dtype))
            )
            specs.append(cal.InputSpec(v.name, dt, shape_of(v)))
        return specs

    # ------------------------------------------------------------------------------------ calibration
    def calibrated_names(self) -> list[str]:
        names: list[str] = []
        for g in self.groups:
            for v in (g.x, g.z, g.output):
                if v is not None and v.name not in names:
                    names.append(v.name)
        return names

    def calibrate(self, data: Any) -> None:
        cfg = self.config
        self.feeds = cal.get_feeds(data, self.input_specs(), cfg.calibration_batch_size, cfg.random_calibration)
        shift = cfg.activation_shift if cfg.activation_shift is not None else cfg.accuracy_target_db is not None
        if shift and self.feeds:
            self._shift_activations()
        names = self.calibrated_names()
        shape_names = self._anchor_value_names()
        sess = mio.Session(mio.with_outputs(self.float_model, names + [n for n in shape_names if n not in names]))
        col = cal.RangeCollector(cfg.num_bins)
        outs = [v.name for v in self.float_model.graph.outputs]
        report_names = set(outs) | {g.output.name for g in self.groups}
        report_feeds = self.eval_feeds(REPORT_SAMPLES)
        self.float_cache = []

        x_axis = {g.x.name: (1 if g.kind == "Conv" else -1) for g in self.groups}
        sums: dict[str, np.ndarray] = {}
        counts: dict[str, int] = {}
        bar = cal.ProgressBar(len(self.feeds), "calibrating", self.progress)
        for i, feed in enumerate(self.feeds):
            extra = [o for o in outs if o not in names]
            if i == 0:  # the MACs count the first batch's real shapes
                extra += [n for n in shape_names if n not in names and n not in extra]
            got = sess.run(feed, names + extra)
            if i == 0:
                self._count_macs(feed, {k: tuple(np.shape(v)) for k, v in got.items()})
            for name in names:
                col.add_max(name, got[name])
                if cfg.bias_correction and name in x_axis:
                    a = np.moveaxis(np.asarray(got[name], dtype=np.float64), x_axis[name], -1)
                    a = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
                    sums[name] = sums.get(name, 0.0) + a.sum(axis=0)
                    counts[name] = counts.get(name, 0) + a.shape[0]
            if i < len(report_feeds):
                self.float_cache.append({k: v for k, v in got.items() if k in report_names})
            bar.update()
        if cfg.calibration_method != "max" and names:
            cal.run_collect(
                sess, self.feeds, names, col.add_hist, f"histograms ({cfg.calibration_method})", self.progress
            )
        pow2 = cfg.power_of_two_scales
        self.amax = {n: col.amax_for(n, cfg.calibration_method, cfg.fp8, cfg.percentile, pow2) for n in names}
        self.observed_max = {n: col.amax.get(n, 0.0) for n in names}
        if cfg.weight_rounding == "compensated":
            from .rounding import optimize_rounding

            todo = [g for g in self.groups if g.quantized and g.name not in self.fp8_weights]
            done = optimize_rounding(self.float_model, todo, self.feeds, cfg.fp8)
            self.fp8_weights.update(done)
            self.notes.append(
                f"weight rounding: {len(done)} of {len(todo)} layer(s) rounded with error compensation (GPTQ-style, "
                "same scales); the others keep round-to-nearest"
            )
        self.x_mean = {n: sums[n] / max(counts[n], 1) for n in sums}

    def _shift_activations(self) -> None:
        """Take per-channel means out of FP8 layer inputs where the float graph absorbs them (``shift.py``)."""
        from .shift import shift_activations

        cfg = self.config
        shifted = shift_activations(self.float_model, self.groups, self.feeds, cfg.fp8, cfg.power_of_two_scales)
        if not shifted:
            return
        matching = match_groups(self.float_model.graph, self.config)  # the constants changed: match them again
        self.groups, self.skipped = matching.groups, matching.skipped
        self.float_reason = {g.name: g.reason for g in self.groups if not g.quantized}
        gains = sorted(shifted.values())
        self.notes.append(
            f"activation mean shift: {len(shifted)} layer input(s) quantized as x - mean (the mean folded into the "
            f"float constants around them), FP8 rounding noise of those inputs {gains[0]:.1f} to {gains[-1]:.1f} dB "
            "lower on the first calibration batch"
        )

    def _anchor_value_names(self) -> list[str]:
        """Inputs and outputs of every Conv/Gemm/MatMul: their measured shapes give the MACs."""
        names: list[str] = []
        for node in [g.anchor for g in self.groups] + list(self.skipped):
            for v in (*node.inputs[:2], node.outputs[0]):
                if v is not None and v.name and v.const_value is None and v.name not in names:
                    names.append(v.name)
        return names

    def _count_macs(self, feed: cal.Feed, shapes: dict[str, tuple[int, ...]]) -> None:
        """MACs per sample of every anchor from the shapes measured on one calibration batch."""
        shapes = {**{k: tuple(np.shape(v)) for k, v in feed.items()}, **shapes}
        samples = max(len(next(iter(feed.values()))) if feed else 1, 1)

        def per_sample(node: ir.Node) -> int | None:
            m = node_macs(node, shapes)
            return None if m is None else m // samples

        for g in self.groups:
            g.macs = per_sample(g.anchor)
        self.skipped_macs = {n.name: per_sample(n) for n in self.skipped}
        unknown = [g.name for g in self.groups if g.macs is None] + [
            k for k, v in self.skipped_macs.items() if v is None
        ]
        if unknown:
            self.notes.append(
                f"MACs not measured (shape unknown) for {len(unknown)} layer(s): "
                + ", ".join(unknown[:8])
                + (" ..." if len(unknown) > 8 else "")
            )

    def eval_feeds(self, samples: int) -> list[cal.Feed]:
        """The first calibration batches holding at least ``samples`` samples."""
        out, n = [], 0
        for f in self.feeds:
            if n >= samples:
                break
            out.append(f)
            n += len(next(iter(f.values()))) if f else 1
        return out

    # --------------------------------------------------------------------------------------- building
    def build(
        self, fmt: str, keep_float: set[str] | None = None, final: bool = False, switches: bool = False
    ) -> ir.Model:
        """A fresh copy of the float model, rewritten into ``fmt`` with the plan's decisions (``switches``: the
        QDQ sensitivity model, see ``rewrite.QdqEmitter``)."""
        keep = set(self.float_reason) | (keep_float if keep_float is not None else set(self.kept_for_target))
        model = ir.from_proto(ir.to_proto(self.float_model))
        groups = match_groups(model.graph, self.config.replace(keep_first_layer=False, keep_last_layer=False)).groups
        for g in groups:
            g.fp8_weight = self.fp8_weights.get(g.name)  # the FP8 weights of earlier builds: same weights, same format
            if g.name in keep:
                g.quantized = False
            elif self.config.bias_correction and g.x.name in self.x_mean:
                correct_bias(g, self.config.fp8, self.x_mean[g.x.name])
        emit(model, groups, self.amax, self.config, fmt, switches, self.float_residuals, self.observed_max)
        self.fp8_weights.update({g.name: g.fp8_weight for g in groups if g.fp8_weight is not None})
        if final:
            model.metadata_props[METADATA_KEY] = self.config.to_json()
            model.producer_name = "fp8ort"
            if mio.model_nbytes(model) < mio.TWO_GB // 2:
                try:
                    onnx.checker.check_model(ir.to_proto(model), full_check=True)
                except Exception as exc:  # a bug of ours, never the user's: say so
                    raise QuantizeError(
                        f"internal error: the quantized model fails the ONNX checker ({exc}); "
                        "please report it with the model"
                    ) from exc
        return model

    def output_sqnr(
        self, model: ir.Model, names: list[str], feeds: list[cal.Feed], float_cache: list[dict] | None = None
    ) -> SqnrAccumulator:
        """SQNR of ``names`` in ``model`` (a QDQ emulation) against the float model over ``feeds``."""
        acc = SqnrAccumulator()
        qs = mio.Session(mio.with_outputs(model, names))
        fs = None if float_cache is not None else mio.Session(mio.with_outputs(self.float_model, names))
        for i, feed in enumerate(feeds):
            ref = float_cache[i] if float_cache is not None else fs.run(feed, names)
            got = qs.run(feed, names)
            for n in names:
                acc.add(n, ref[n], got[n])
        return acc

    # ------------------------------------------------------------------------------------------ report
    def make_report(self, quantized: ir.Model) -> QuantizeReport:
        quantized_groups = [g for g in self.groups if self.is_fp8(g)]
        out_names = [v.name for v in self.float_model.graph.outputs]
        acc = None
        if self.config.report_sqnr and quantized_groups and self.feeds:
            names = out_names + [g.output.name for g in quantized_groups if g.output.name not in out_names]
            feeds = self.eval_feeds(REPORT_SAMPLES)
            acc = self.output_sqnr(self.build("qdq"), names, feeds, self.float_cache[: len(feeds)])
        nodes = self._node_reports(acc)
        _pool_reports(nodes, quantized)
        _attention_reports(nodes, quantized)
        _island_reports(nodes, quantized)
        if self.config.format == "fp8ort" and self.config.fuse_attention and self.config.attention_float16:
            note = _float16_attention_note(quantized)
            if note:
                self.notes.append(note)
        if self.config.format == "qdq" and any(g.kind != "Conv" for g in quantized_groups):
            self.notes.append(
                "onnxruntime 1.30 and 1.31 fuse FP8 DequantizeLinear->MatMul into MatMulIntegerToFloat and then "
                "reject the model: run this QDQ model there with so.add_session_config_entry("
                "'session.disable_quant_qdq', '1') (or graph_optimization_level=ORT_ENABLE_BASIC)"
            )
        total = sum(n.macs for n in nodes)
        fp8 = sum(n.macs for n in nodes if n.status == "fp8")
        return QuantizeReport(
            nodes=nodes,
            output_sqnr_db={n: acc.db(n) for n in out_names} if acc else {},
            total_macs=total,
            fp8_macs=fp8,
            kept_in_float=list(self.kept_for_target),
            config=self.config.to_dict(),
            calibration={
                "method": self.config.calibration_method,
                "batches": len(self.feeds),
                "samples": int(sum(len(next(iter(f.values()))) for f in self.feeds if f)),
            },
            notes=self.notes,
        )

    def is_fp8(self, g: Group) -> bool:
        """Whether the final model has ``g`` as an FP8 op."""
        return g.name not in self.float_reason and g.name not in self.kept_for_target

    def _group_reason(self, g: Group) -> str:
        if g.name in self.kept_for_target:
            return f"kept in high precision: accuracy_target_db={self.config.accuracy_target_db}"
        if not self.is_fp8(g):
            return self.float_reason[g.name]
        extra = "; residual input kept in high precision (accuracy target)" if g.name in self.float_residuals else ""
        return f"FP8 {g.op_type} ({g.describe()}){extra}"

    def _node_reports(self, acc: SqnrAccumulator | None) -> list[NodeReport]:
        by_node: dict[str, NodeReport] = {}
        for g in self.groups:
            q = self.is_fp8(g)
            by_node[g.name] = NodeReport(
                g.name,
                g.kind,
                "fp8" if q else "float",
                reason=self._group_reason(g),
                macs=g.macs or 0,
                sqnr_db=acc.db(g.output.name) if (acc and q) else None,
                sensitivity_db=self.sensitivity.get(g.name),
            )
            for n in g.nodes[1:]:
                by_node[n.name] = NodeReport(
                    n.name,
                    n.op_type,
                    "fused" if q else "float",
                    fused_into=g.name if q else None,
                    reason="" if q else f"epilogue of {g.name}, which stays float",
                )
        for node, why in self.skipped.items():
            by_node[node.name] = NodeReport(
                node.name, node.op_type, "float", reason=why, macs=self.skipped_macs.get(node.name) or 0
            )
        for line in self.subgraph_layers:
            by_node[line.name] = line
        for bn, conv in self.folded.items():
            by_node[bn] = NodeReport(bn, "BatchNormalization", "folded", reason=f"folded into {conv}", fused_into=conv)
        for mul, layer in self.scaled.items():
            by_node[mul] = NodeReport(
                mul, "Mul", "folded", reason=f"per-channel scale folded into {layer}'s weights", fused_into=layer
            )
        reports = []
        for name, op in self.source_nodes:
            reports.append(by_node.pop(name, None) or NodeReport(name, op, "float", reason=_other_reason(op)))
        reports.extend(by_node.values())
        return reports


def _subgraph_layers(graph: ir.Graph) -> list[NodeReport]:
    """Report lines for the Conv/Gemm/MatMul inside If/Loop/Scan bodies (only the main graph is quantized)."""
    lines = []
    for node in graph:
        for attr in node.attributes.values():
            if attr.type == ir.AttributeType.GRAPH:
                bodies = [attr.value]
            elif attr.type == ir.AttributeType.GRAPHS:
                bodies = list(attr.value)
            else:
                continue
            for body in bodies:
                for inner in ir.traversal.RecursiveGraphIterator(body):
                    if inner.op_type in ANCHOR_OPS and inner.domain in ("", "ai.onnx"):
                        lines.append(
                            NodeReport(
                                inner.name or f"{node.name}/{attr.name}/{inner.op_type}_{len(lines)}",
                                inner.op_type,
                                "float",
                                reason=f"inside the {attr.name} subgraph of {node.op_type} {node.name}: "
                                "fp8ort quantizes the main graph only",
                            )
                        )
    return lines


def _pool_reports(nodes: list[NodeReport], quantized: ir.Model) -> None:
    """The MaxPools of the NHWC layout: run on FP8 data (FP8MaxPool), or the reason they stay float."""
    pools = {}
    for node in quantized.graph:
        if node.domain == "com.fp8ort" and node.op_type == "FP8MaxPool":
            pools[node.name] = ("fp8", "FP8MaxPool on NHWC FP8 data (its producer outputs FP8 with its readers' scale)")
        elif node.op_type == "MaxPool" and POOL_REASON_KEY in node.meta:
            pools[node.name] = ("float", f"runs in float: {node.meta[POOL_REASON_KEY]}")
    for n in nodes:
        if n.op_type == "MaxPool" and n.name in pools:
            n.status, n.reason = pools[n.name]


def _attention_reports(nodes: list[NodeReport], quantized: ir.Model) -> None:
    """Attention blocks: the Softmax line becomes the FP8Attention that replaced the block (its other nodes are
    fused into it), or says why the block stays float ops."""
    lines: dict[str, tuple[str, str]] = {}
    fused: dict[str, str] = {}
    for node in quantized.graph:
        if node.domain == "com.fp8ort" and node.op_type == "FP8Attention":
            lines[node.name] = ("fp8", node.meta.get(ATTENTION_INFO_KEY, "FP8Attention"))
            for name in node.meta.get(ATTENTION_NODES_KEY, []):
                if name != node.name:
                    fused[name] = node.name
        elif node.op_type == "Softmax" and ATTENTION_REASON_KEY in node.meta:
            lines[node.name] = ("float", f"attention block left unfused: {node.meta[ATTENTION_REASON_KEY]}")
    for n in nodes:
        if n.op_type == "Softmax" and n.name in lines:
            n.status, n.reason = lines[n.name]
        elif n.name in fused:
            n.status, n.reason, n.fused_into = "fused", "", fused[n.name]


def _float16_attention_note(quantized: ir.Model) -> str | None:
    """How many FP8Attentions read float16 Q, K and V (``attention_float16``); their report lines say why not."""
    attns = [n for n in quantized.graph if n.domain == "com.fp8ort" and n.op_type == "FP8Attention"]
    if not attns:
        return None
    half = sum(n.inputs[0].dtype == ir.DataType.FLOAT16 for n in attns)
    note = f"attention_float16: {half} of {len(attns)} FP8Attention read float16 Q, K and V from their projections"
    if half < len(attns):
        note += f"; {len(attns) - half} keep float32 (their report lines say why)"
    return note


def _island_reports(nodes: list[NodeReport], quantized: ir.Model) -> None:
    """LayerNormalizations that write an FP8 copy of their output, spatial means and squeeze-excitation gates on
    FP8 data (``layernorm.py``, ``pooling.py``), or why such a node stays float. The layout pass renames the float
    pools and gates it moves to NHWC (``<name>.nhwc``), keeping their reason."""
    lines: dict[str, tuple[str, str]] = {}
    for node in quantized.graph:
        name = node.name or ""
        if node.domain == "com.fp8ort" and node.op_type == "FP8LayerNormalization":
            lines[name] = ("fp8", node.meta.get(LAYERNORM_INFO_KEY, node.op_type))
        elif node.domain == "com.fp8ort" and node.op_type == "FP8GlobalAveragePool":
            lines[name] = ("fp8", "FP8GlobalAveragePool: the mean over H and W of its producer's FP8 output")
        elif node.domain == "com.fp8ort" and node.op_type == "FP8ChannelMul":
            lines[name] = ("fp8", "FP8ChannelMul: the gate times its producer's FP8 output, in FP8 for the next conv")
        elif LAYERNORM_REASON_KEY in node.meta:
            lines[name] = ("float", f"runs in float: {node.meta[LAYERNORM_REASON_KEY]}")
        elif POOLING_REASON_KEY in node.meta:
            lines[name.removesuffix(".nhwc")] = ("float", f"runs in float: {node.meta[POOLING_REASON_KEY]}")
    for n in nodes:
        if n.name in lines and n.status == "float":
            n.status, n.reason = lines[n.name]


def _other_reason(op: str) -> str:
    return f"{op} has no FP8 kernel; it runs in float (FP8 inputs are never fed to it)"
