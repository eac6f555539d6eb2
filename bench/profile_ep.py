"""One run of an exported, fp8ort-quantized model through the plugin EP's GPU device, bracketed by
cudaProfilerStart/Stop so that Nsight Compute times every kernel of that run only:

    ncu --profile-from-start off --metrics gpu__time_duration.sum --print-summary per-kernel \
        python3 bench/profile_ep.py --model resnet50 --layout NCHW --batch 32

(ncu serializes kernels: the sum is the kernels' time, not the run's wall time.) Random weights and inputs.
``BENCH_CONFIG`` (JSON) changes QuantizeConfig fields, as in plugin_ep_gpu.py.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import make_inputs  # noqa: E402
from plugin_ep_gpu import VENDOR_IDS, bind_device_io  # noqa: E402
from pytorch_side import export_model  # noqa: E402

import fp8ort  # noqa: E402


def cudart() -> ctypes.CDLL:
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", ctypes.util.find_library("cudart") or ""):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    import torch  # the CUDA runtime torch loaded

    torch.cuda.init()
    return ctypes.CDLL(None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fp8ort_prof_"))
    fp32, fp8 = work / "m.onnx", work / "m.fp8.onnx"
    export_model(args.model, fp32)
    cfg = fp8ort.QuantizeConfig(layout=args.layout, report_sqnr=False)
    if os.environ.get("BENCH_CONFIG"):
        cfg = cfg.replace(**json.loads(os.environ["BENCH_CONFIG"]))
    fp8ort.quantize(str(fp32), str(fp8), calibration_data=make_inputs(args.model, 4, 1), config=cfg)
    sess = fp8ort.InferenceSession(str(fp8), device="gpu")
    feed = make_inputs(args.model, args.batch, 2)
    vendor = VENDOR_IDS.get(fp8ort.backend(), 0x10DE)
    shape = list(sess.run([sess.get_outputs()[0].name], feed)[0].shape)
    binding, _y, _keep = bind_device_io(sess, feed, shape, vendor)
    for _ in range(3):
        sess.run_with_iobinding(binding)
    binding.synchronize_outputs()
    rt = cudart()
    rt.cudaProfilerStart()
    sess.run_with_iobinding(binding)
    binding.synchronize_outputs()
    rt.cudaProfilerStop()
    print(f"profiled one run of {args.model} ({args.layout}) at batch {args.batch}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
