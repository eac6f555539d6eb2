"""NHWC output of the quantizer runs in ORT and equals the NCHW model bit for bit (the CPU kernels sum exactly)."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest
import qmodels
from conftest import library_path

import fp8ort
from fp8ort import ops


@pytest.mark.parametrize("build", [qmodels.bottleneck, qmodels.resnetish], ids=["downsample-block", "resnetish"])
def test_nhwc_model_loads_and_matches_nchw(build):
    lib = library_path()
    if lib is None:
        pytest.skip("libfp8ort.so is not built")
    model = build()
    calib = qmodels.calib(model)
    outs = {}
    for layout in ("NCHW", "NHWC"):
        q = fp8ort.quantize(ir.to_proto(build()), calibration_data=calib, config=fp8ort.QuantizeConfig(layout=layout))
        onnx.checker.check_model(q, full_check=True)
        if layout == "NHWC":
            # every Transpose reads a float or FP8 tensor of the declared type: ORT loads the model
            assert sum(n.op_type == "Transpose" for n in q.graph.node) <= 4
        feed = {k: v[:2] for k, v in calib.items()}
        outs[layout] = ops.run(ops.session(q, lib), feed)
    for a, b in zip(outs["NCHW"], outs["NHWC"], strict=True):
        np.testing.assert_array_equal(a, b)
