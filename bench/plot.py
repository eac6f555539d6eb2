"""Plot and table of the GPU benchmark: throughput against batch size, one panel per model, one line per system.

    python bench/plot.py [bench/results/h200.json] [--png bench/results/h200.png] [--md bench/results/h200.md]

Reads the record ``bench/plugin_ep_gpu.py --out`` writes; by default writes the PNG and the Markdown table next to
it. The table needs only the standard library; the plot needs matplotlib (without it the table is still written).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# Every system the benchmark writes, in the order the legend and the table list them.
LABELS = {
    "fp8ort": "fp8ort FP8, plugin EP",
    "fp8ort_graph": "fp8ort FP8, plugin EP + graph capture",
    "fp8ort_nchw": "fp8ort FP8 layout NCHW, plugin EP",
    "fp8ort_nhwc": "fp8ort FP8 NHWC, plugin EP",
    "fp8ort_nhwc_graph": "fp8ort FP8 NHWC, plugin EP + graph capture",
    "fp8ort_cuda_ep": "fp8ort FP8, custom ops on ORT CUDA EP",
    "fp8ort_cuda_ep_graph": "fp8ort FP8, custom ops on ORT CUDA EP + CUDA graph",
    "ort_cuda_fp16_nhwc_graph": "ORT CUDA EP FP16, prefer_nhwc + CUDA graph",
    "ort_cuda_fp16_opt_graph": "ORT CUDA EP FP16, transformer optimizer + CUDA graph",
    "ort_cuda_fp16_opt": "ORT CUDA EP FP16, transformer optimizer",
    "ort_cuda_fp16_graph": "ORT CUDA EP FP16 + CUDA graph",
    "ort_cuda_fp16": "ORT CUDA EP FP16",
    "torch_fp16_graph": "PyTorch FP16 + CUDA graph",
    "torch_compile_graph": "PyTorch FP16 torch.compile + CUDA graph",
}
MODEL_NAMES = {"resnet50": "ResNet-50", "efficientnet_b0": "EfficientNet-B0", "bert": "BERT-base, seq 128"}
DEFAULT_SOURCE = "exports (torch.onnx.export of torchvision / timm / transformers models, random weights)"


def unit(model: str) -> str:
    return "sequences/s" if model == "bert" else "images/s"


def batch_rows(entry: dict) -> dict[int, dict]:
    """The batch rows of a model entry, by batch size (the entry's other keys are about the model)."""
    return {int(k): v for k, v in entry.items() if k.isdigit() and isinstance(v, dict)}


def systems(entry: dict) -> list[str]:
    """Systems present in a model's rows: the known ones in LABELS order, then any others by name."""
    seen = {key for row in batch_rows(entry).values() for key in row}
    return [k for k in LABELS if k in seen] + sorted(seen - LABELS.keys())


def series(entry: dict, system: str) -> tuple[list[int], list[float]]:
    """(batches, throughputs) of one system, leaving out failed measurements."""
    points = [
        (b, row[system]["per_s"]) for b, row in sorted(batch_rows(entry).items()) if "per_s" in row.get(system, {})
    ]
    return [b for b, _ in points], [t for _, t in points]


def title(record: dict) -> str:
    parts = [record.get("gpu", "unknown GPU").split(",")[0], record.get("date", "undated")]
    parts.append(f"onnxruntime {record.get('onnxruntime', '?')} (plugin EP)")
    if record.get("onnxruntime_gpu"):
        parts.append(f"onnxruntime-gpu {record['onnxruntime_gpu']} (CUDA EP)")
    return ", ".join(parts)


def _cell(value: dict | None, notes: list[str]) -> str:
    if not value:
        return ""
    if "per_s" in value:
        return f"{value['per_s']:,.0f}"
    note = value.get("error", "no result")
    if note not in notes:
        notes.append(note)
    return f"failed ({notes.index(note) + 1})"


def markdown(record: dict) -> str:
    """The results as Markdown: one throughput table per model, failures as numbered notes under it."""
    lines = [f"# {title(record)}", ""]
    lines.append(f"Models: {record.get('models', DEFAULT_SOURCE)}.")
    if record.get("timing"):
        lines.append(f"Timing: {record['timing']}.")
    lines.append("")
    for model, entry in record.get("results", {}).items():
        lines.append(f"## {MODEL_NAMES.get(model, model)} ({unit(model)})")
        lines.append("")
        if "error" in entry:
            lines += [f"Not measured: {entry['error']}", ""]
            continue
        rows = batch_rows(entry)
        batches = sorted(rows)
        notes: list[str] = []
        lines.append("| system | " + " | ".join(f"batch {b}" for b in batches) + " |")
        lines.append("| --- |" + " ---: |" * len(batches))
        for key in systems(entry):
            cells = [_cell(rows[b].get(key), notes) for b in batches]
            lines.append(f"| {LABELS.get(key, key)} | " + " | ".join(cells) + " |")
        lines.append("")
        if "fp8_mac_share" in entry:
            sqnr = [
                rows[b]["fp8ort"]["sqnr_db_vs_fp32"] for b in batches if "sqnr_db_vs_fp32" in rows[b].get("fp8ort", {})
            ]
            accuracy = f", output SQNR vs FP32 {min(sqnr):.1f} dB (worst batch)" if sqnr else ""
            lines += [f"fp8ort: {entry['fp8_mac_share']:.0%} of MACs in FP8{accuracy}.", ""]
        lines += [f"{i}. {note}" for i, note in enumerate(notes, 1)] + ([""] if notes else [])
    return "\n".join(lines)


def write_plot(record: dict, path: Path) -> None:
    """Throughput against batch size (log-log), one panel per model; raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    results = record.get("results", {})
    models = list(results)
    every = [k for k in LABELS if any(k in systems(e) for e in results.values())]
    every += sorted({k for e in results.values() for k in systems(e)} - set(every))
    colors = {k: plt.get_cmap("tab10")(i % 10) for i, k in enumerate(every)}
    fig, axes = plt.subplots(1, max(len(models), 1), figsize=(5.2 * max(len(models), 1), 4.6), squeeze=False)
    for ax, model in zip(axes[0], models, strict=False):
        entry = results[model]
        ax.set_title(MODEL_NAMES.get(model, model))
        if "error" in entry:
            ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        for key in systems(entry):
            xs, ys = series(entry, key)
            if xs:
                ours = key.startswith("fp8ort")  # fp8ort solid and thicker, the baselines dashed
                style = {"linestyle": "-" if ours else "--", "linewidth": 2.2 if ours else 1.4}
                ax.plot(xs, ys, marker="o", color=colors[key], label=LABELS.get(key, key), **style)
        batches = sorted(batch_rows(entry))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(batches)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("batch size")
        ax.set_ylabel(unit(model))
        ax.grid(True, which="both", alpha=0.3)
    handles = {}
    for ax in axes[0]:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    order = [LABELS.get(k, k) for k in every if LABELS.get(k, k) in handles]  # the legend in LABELS order
    fig.suptitle(title(record))
    fig.legend([handles[x] for x in order], order, loc="lower center", ncol=3, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.06 + 0.035 * ((len(handles) + 2) // 3), 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_all(record: dict, json_path: Path, png: Path | None = None, md: Path | None = None) -> list[Path]:
    """Writes the table and (where matplotlib is installed) the plot; returns the files written."""
    md = md or json_path.with_suffix(".md")
    png = png or json_path.with_suffix(".png")
    md.write_text(markdown(record) + "\n")
    written = [md]
    try:
        write_plot(record, png)
        written.append(png)
    except ImportError:
        print(f"plot skipped: matplotlib is not installed (pip install matplotlib); table in {md}", file=sys.stderr)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="?", type=Path, default=Path(__file__).parent / "results" / "h200.json")
    ap.add_argument("--png", type=Path, default=None)
    ap.add_argument("--md", type=Path, default=None)
    args = ap.parse_args(argv)
    record = json.loads(args.json.read_text())
    for path in write_all(record, args.json, args.png, args.md):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
