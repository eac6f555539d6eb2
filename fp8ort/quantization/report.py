"""What the quantizer did to each node and why, with per-layer SQNR against the float model."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any


@dataclasses.dataclass
class NodeReport:
    """One node of the (BatchNorm-folded) float model.

    ``status``: ``fp8`` (anchor of an FP8 op), ``fused`` (absorbed into the FP8 op ``fused_into``), ``folded``
    (BatchNorm folded into a Conv), ``float`` (left in high precision; ``reason`` says why).
    """

    name: str
    op_type: str
    status: str
    reason: str = ""
    fused_into: str | None = None
    macs: int = 0  # per sample, from the shapes measured on the first calibration batch (0: not measured)
    sqnr_db: float | None = None
    sensitivity_db: float | None = None


@dataclasses.dataclass
class QuantizeReport:
    """The result of one ``fp8ort.quantize`` call, as data (``to_dict``) and as a table (``str``)."""

    nodes: list[NodeReport]
    output_sqnr_db: dict[str, float]
    total_macs: int
    fp8_macs: int
    kept_in_float: list[str]
    config: dict[str, Any]
    calibration: dict[str, Any]
    seconds: float = 0.0
    output_path: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def fp8_mac_share(self) -> float:
        return self.fp8_macs / self.total_macs if self.total_macs else 0.0

    @property
    def fp8_nodes(self) -> list[str]:
        return [n.name for n in self.nodes if n.status == "fp8"]

    def node(self, name: str) -> NodeReport:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node named {name!r} in the report")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["fp8_mac_share"] = self.fp8_mac_share
        return _clean(d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def summary(self) -> str:
        n_fp8 = sum(n.status == "fp8" for n in self.nodes)
        sq = ", ".join(f"{k}: {_db(v)}" for k, v in self.output_sqnr_db.items()) or "not measured"
        lines = [
            (
                f"fp8ort quantize: {n_fp8} FP8 ops, {100 * self.fp8_mac_share:.1f}% of {self.total_macs / 1e6:.1f} M "
                f"Conv/Gemm/MatMul MACs per sample in FP8; format {self.config.get('format')}, "
                f"{self.config.get('fp8_format')}, "
                f"calibration {self.config.get('calibration_method')} on {self.calibration.get('samples')} samples"
                f" ({self.calibration.get('batches')} batches); {self.seconds:.1f} s"
            ),
            f"output SQNR vs float on the calibration data: {sq}",
        ]
        if self.kept_in_float:
            lines.append(
                f"kept in high precision for accuracy_target_db={self.config.get('accuracy_target_db')}: "
                + ", ".join(self.kept_in_float)
            )
        lines += self.notes
        return "\n".join(lines)

    def table(self) -> str:
        rows = [("node", "op", "status", "MMAC", "SQNR dB", "reason / fused into")]
        for n in self.nodes:
            why = n.reason or (f"-> {n.fused_into}" if n.fused_into else "")
            if n.sensitivity_db is not None:
                why = f"{why} (alone: {n.sensitivity_db:.1f} dB)".strip()
            rows.append(
                (
                    n.name,
                    n.op_type,
                    n.status,
                    f"{n.macs / 1e6:.1f}" if n.macs else "",
                    _db(n.sqnr_db) if n.sqnr_db is not None else "",
                    why,
                )
            )
        widths = [min(max(len(r[i]) for r in rows), 48) for i in range(5)]
        out = []
        for r in rows:
            out.append("  ".join(c[:48].ljust(w) for c, w in zip(r[:5], widths)) + "  " + r[5])
        return "\n".join(out)

    def __str__(self) -> str:
        return self.summary() + "\n\n" + self.table()


def _db(v: float | None) -> str:
    if v is None:
        return "-"
    return "inf" if math.isinf(v) and v > 0 else f"{v:.1f}"


def _clean(obj: Any) -> Any:
    """JSON-safe: infinities become strings."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


class SqnrAccumulator:
    """Signal and noise power per tensor, summed over batches."""

    def __init__(self) -> None:
        self.signal: dict[str, float] = {}
        self.noise: dict[str, float] = {}

    def add(self, name: str, ref: Any, actual: Any) -> None:
        import numpy as np

        r = np.asarray(ref, dtype=np.float64)
        e = r - np.asarray(actual, dtype=np.float64)
        self.signal[name] = self.signal.get(name, 0.0) + float(np.sum(r * r))
        self.noise[name] = self.noise.get(name, 0.0) + float(np.sum(e * e))

    def db(self, name: str) -> float | None:
        if name not in self.signal:
            return None
        s, n = self.signal[name], self.noise[name]
        if n == 0.0:
            return float("inf")
        if s == 0.0:
            return float("-inf")
        return 10.0 * math.log10(s / n)
