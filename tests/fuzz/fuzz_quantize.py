"""Fuzz ONNX loading and fp8ort's graph pass: mutated bytes (or structured edits) of a small float CNN are loaded
with onnx and quantized by ``fp8ort.quantize``, from a ModelProto or from a file.

A finding is any exception other than a clean rejection (``QuantizeError`` and its subclasses from the quantizer,
protobuf's ``DecodeError`` from ``onnx.load_from_string``), and a quantized model that fails ``onnx.checker``.

Usage: python -m tests.fuzz.fuzz_quantize [--time S] [--seed N] [--crash-dir D] [--no-atheris] [INPUT...]
       (INPUT files: replay each once; exit status 1 on a finding)
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import warnings

if __name__ == "__main__" and "--no-atheris" not in sys.argv and "fp8ort" not in sys.modules:
    try:  # coverage guidance: instrument fp8ort's Python code when atheris is there
        import atheris

        with atheris.instrument_imports(include=["fp8ort"]):
            import fp8ort.quantization  # noqa: F401  (instrumented here, used below)
    except ImportError:
        pass
import onnx
import onnx_ir as ir
from google.protobuf.message import DecodeError

import fp8ort.quantization as fq
from tests.fuzz import _driver, _mutate
from tests.quantization import qmodels

DEFAULT_TIME_S = 60
MEMORY_LIMIT = 6 << 30  # address space of the fuzzing process (RLIMIT_AS)

_SEED_IR = qmodels.resnetish()
SEED = ir.to_proto(_SEED_IR)
CALIBRATION = qmodels.calib(_SEED_IR, n=4)
_TMP = tempfile.mkdtemp(prefix="fuzz_quantize-")


class Finding(Exception):
    """The graph pass did something other than quantize or reject cleanly."""


def target(data: bytes) -> None:
    """Raises ``Finding`` (or the unexpected exception itself) when the input is a finding."""
    raw = _mutate.model_bytes(SEED, data)
    via_file = len(data) > 0 and (data[0] >> 1) & 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if via_file:  # the quantizer's own loader
            path = os.path.join(_TMP, "m.onnx")
            with open(path, "wb") as f:
                f.write(raw)
            model = path
        else:
            try:
                model = onnx.load_from_string(raw)
            except DecodeError:
                return
        try:
            q = fq.quantize(model, calibration_data=CALIBRATION)
        except fq.QuantizeError as exc:
            if not str(exc):
                raise Finding(f"{type(exc).__name__} with an empty message") from exc
            return
    try:
        onnx.checker.check_model(q, full_check=True)
    except Exception as exc:
        raise Finding(f"the quantized model fails onnx.checker: {type(exc).__name__}: {exc}") from exc


def main(argv: list[str]) -> int:
    # A hostile attribute makes onnxruntime's calibration run allocate what the model asks (4.6 GB for one found):
    # under this limit that fails as an error of the run (a known finding) instead of exhausting the machine.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    return _driver.run("fuzz_quantize", target, SEED.SerializeToString(), argv, DEFAULT_TIME_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
