"""``fp8ort`` command line: ``quantize`` (offline conversion), ``info`` (diagnostics), ``demo`` (the main job)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .quantization.config import (
    CALIBRATION_METHODS,
    FORMATS,
    FP8_FORMATS,
    LAYOUTS,
    OP_TYPES,
    WEIGHT_ROUNDINGS,
    QuantizeConfig,
)

_DEFAULTS = QuantizeConfig()  # the flags' defaults are the config's


def _quantize_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "quantize",
        help="quantize a float ONNX model to FP8",
        description="Quantize a float ONNX model to FP8 and print what happened to every node.",
    )
    p.add_argument("model", help="float .onnx model")
    p.add_argument("-o", "--output", required=True, help="quantized .onnx model to write")
    p.add_argument("--calibration-data", help=".npz file with one array per model input (leading sample axis)")
    p.add_argument(
        "--random-calibration",
        action="store_true",
        help="calibrate on random inputs when no data are given (scales will not fit real data)",
    )
    p.add_argument(
        "--calibration-method",
        choices=("auto", *CALIBRATION_METHODS),
        default="auto",
        help="auto (default): max, or mse with --accuracy-target-db",
    )
    p.add_argument("--percentile", type=float, default=_DEFAULTS.percentile, help="for --calibration-method percentile")
    p.add_argument("--op-types", nargs="+", choices=OP_TYPES, default=list(_DEFAULTS.op_types))
    p.add_argument("--exclude-op-types", nargs="+", default=[], metavar="OP")
    p.add_argument("--exclude-nodes", nargs="+", default=[], metavar="REGEX", help="node-name regexes kept in float")
    p.add_argument("--keep-first-layer", action="store_true", help="keep the first Conv/Gemm/MatMul in float")
    p.add_argument("--keep-last-layer", action="store_true", help="keep the last Conv/Gemm/MatMul in float")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=_DEFAULTS.format,
        help="fp8ort: com.fp8ort ops (needs libfp8ort); qdq: standard FP8 Q/DQ for other runtimes",
    )
    p.add_argument(
        "--layout",
        type=str.upper,
        choices=LAYOUTS,
        default="AUTO",
        help="AUTO (default): NHWC for --format fp8ort, NCHW for qdq; NCHW keeps FP8Conv on NCHW data",
    )
    p.add_argument(
        "--fp8-format", choices=FP8_FORMATS, default=_DEFAULTS.fp8_format, help="e4m3fnuz for MI300 (gfx942)"
    )
    p.add_argument("--no-fp8-activations", action="store_true", help="keep activations between FP8 ops in float")
    p.add_argument(
        "--no-fuse-attention",
        action="store_true",
        help="keep multi-head attention blocks as float ops instead of one FP8Attention each",
    )
    p.add_argument(
        "--no-attention-float16",
        action="store_true",
        help="keep FP8Attention's Q, K and V float32 (default: float16 where the calibrated range fits)",
    )
    p.add_argument(
        "--accuracy-target-db",
        type=float,
        default=None,
        help="keep the layers with the most output noise per MAC in float until the output SQNR "
        "against the float model on the calibration data reaches this (dB)",
    )
    p.add_argument(
        "--no-bias-correction",
        action="store_true",
        help="do not fold the mean shift of FP8 weight rounding into the biases",
    )
    p.add_argument(
        "--activation-shift",
        choices=("auto", "on", "off"),
        default="auto",
        help="quantize layer inputs as x - mean where the graph absorbs the mean (auto: only with a target)",
    )
    p.add_argument(
        "--power-of-two-scales",
        action="store_true",
        help="round activation scales up to a power of two (costs accuracy; see the README)",
    )
    p.add_argument(
        "--weight-rounding",
        choices=WEIGHT_ROUNDINGS,
        default=_DEFAULTS.weight_rounding,
        help="compensated: GPTQ-style error-compensating FP8 weight rounding",
    )
    p.add_argument("--calibration-batch-size", type=int, default=_DEFAULTS.calibration_batch_size)
    p.add_argument("--external-data", action="store_true", help="write weights to <output>.data")
    p.add_argument("--report-json", help="also write the report as JSON here")
    p.add_argument("--quiet", action="store_true", help="print the summary only, not the per-node table")


def _cmd_quantize(args: argparse.Namespace) -> int:
    from .quantization import QuantizeConfig, QuantizeError, quantize

    try:
        cfg = QuantizeConfig(
            calibration_method=args.calibration_method,
            percentile=args.percentile,
            op_types=tuple(args.op_types),
            exclude_op_types=tuple(args.exclude_op_types),
            exclude_nodes=tuple(args.exclude_nodes),
            keep_first_layer=args.keep_first_layer,
            keep_last_layer=args.keep_last_layer,
            format=args.format,
            layout=args.layout,
            fp8_format=args.fp8_format,
            fp8_activations=not args.no_fp8_activations,
            fuse_attention=not args.no_fuse_attention,
            attention_float16=not args.no_attention_float16,
            accuracy_target_db=args.accuracy_target_db,
            bias_correction=not args.no_bias_correction,
            activation_shift={"auto": None, "on": True, "off": False}[args.activation_shift],
            power_of_two_scales=args.power_of_two_scales,
            weight_rounding=args.weight_rounding,
            calibration_batch_size=args.calibration_batch_size,
            random_calibration=args.random_calibration,
        )
        _, report = quantize(
            args.model,
            args.output,
            calibration_data=args.calibration_data,
            config=cfg,
            return_report=True,
            external_data=args.external_data or None,
        )
    except QuantizeError as exc:
        print(f"fp8ort quantize: error: {exc}", file=sys.stderr)
        return 2
    print(report.summary() if args.quiet else str(report))
    print(f"wrote {args.output}")
    if args.report_json:
        with open(args.report_json, "w") as f:
            f.write(report.to_json())
    return 0


def info() -> dict:
    """Library path, build backend, ORT version, execution providers, fp8ort's EP devices and the GPUs seen."""
    import platform
    import shutil
    import subprocess

    import onnxruntime as ort

    from . import __version__, _library

    d: dict = {
        "fp8ort": __version__,
        "python": platform.python_version(),
        "onnxruntime": ort.__version__,
        "providers": ort.get_available_providers(),
    }
    try:
        d["library"] = _library.get_library_path()
    except FileNotFoundError as exc:
        d["library"] = None
        d["library_error"] = str(exc)
    d["backend"] = None
    if d["library"] is not None:
        try:
            devices = _library.ep_devices()
            d["backend"] = _library.backend()
            d["ep_devices"] = []
            d["gpu_arch"] = []
            for e in devices:
                meta = dict(e.ep_metadata)
                kind = meta.get("fp8ort.device", "?")
                label = f"{e.ep_name}:{kind}"
                if kind == "gpu":
                    label += f":{meta.get('fp8ort.gpu_ordinal', '?')} (pci {meta.get('pci_bus_id', '?')})"
                    if meta.get("fp8ort.gpu_arch"):
                        d["gpu_arch"].append(meta["fp8ort.gpu_arch"])
                d["ep_devices"].append(label)
        except (AttributeError, RuntimeError) as exc:  # ORT older than 1.24, or not a plugin-EP build
            d["ep_devices"] = f"unavailable ({exc})"
    gpus = []
    if shutil.which("nvidia-smi"):
        r = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        gpus += [f"NVIDIA {line.strip()}" for line in r.stdout.splitlines() if line.strip()]
    if shutil.which("rocminfo"):
        r = subprocess.run(["rocminfo"], capture_output=True, text=True, timeout=20, check=False)
        gpus += sorted({w for w in r.stdout.split() if w.startswith("gfx")})
    d["gpus"] = gpus
    return d


def _cmd_info(args: argparse.Namespace) -> int:
    d = info()
    if getattr(args, "json", False):
        print(json.dumps(d, indent=1))
    else:
        for k, v in d.items():
            print(f"{k:>14}: {v}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fp8ort`` command."""
    parser = argparse.ArgumentParser(prog="fp8ort", description="FP8 inference for ONNX models through ONNX Runtime")
    sub = parser.add_subparsers(dest="command", required=True)
    _quantize_parser(sub)
    p = sub.add_parser("info", help="library path, ONNX Runtime version, devices")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("demo", help="build ResNet-50, quantize it, run FP32 and FP8 side by side")
    p.add_argument("--model", help="use this float model instead of the built-in ResNet-50")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a small ResNet (1 block per stage, width 16, 64x64 inputs) instead of ResNet-50: seconds",
    )
    p.add_argument("--workdir", default=None, help="where to write models (default: a temporary directory)")
    p.add_argument("--calibration-images", type=int, default=32)
    p.add_argument("--eval-images", type=int, default=8)
    p.add_argument("--calibration-method", choices=CALIBRATION_METHODS, default="max")
    p.add_argument("--runs", type=int, default=3, help="timed runs per model")
    args = parser.parse_args(argv)
    if args.command == "quantize":
        return _cmd_quantize(args)
    if args.command == "info":
        return _cmd_info(args)
    from .demo import run_demo

    return run_demo(args)


if __name__ == "__main__":
    sys.exit(main())
