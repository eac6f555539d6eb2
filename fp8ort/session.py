"""``fp8ort.InferenceSession``: an ONNX Runtime session on fp8ort's plugin execution provider.

Where every node runs comes from ONNX Runtime itself: the session records its EP graph assignment (session config
``session.record_ep_graph_assignment_info=1``, read back with ``get_provider_graph_assignment_info()``; both exist
in onnxruntime 1.24 through 1.32). ``placement`` maps each node name to the execution provider ORT assigned it to.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

import onnx
import onnxruntime as ort

from ._library import EP_NAME, check_ort_version, ep_devices, ort_version

_GRAPH_CAPTURE_MIN_ORT = (1, 26)
_DEVICE_HELP = "use device='auto', 'cpu', 'gpu' or 'gpu:N'"


class PlacementWarning(UserWarning):
    """Some nodes run on ORT's CPU execution provider because fp8ort's EP has no kernel for them."""


def _gpu_ordinal(dev: Any) -> int:
    return int(dict(dev.ep_metadata).get("fp8ort.gpu_ordinal", "0"))


def _describe(devices: list) -> str:
    if not devices:
        return "none"
    return ", ".join(
        f"{dict(d.ep_metadata).get('fp8ort.device', '?')}"
        + (f":{_gpu_ordinal(d)}" if dict(d.ep_metadata).get("fp8ort.device") == "gpu" else "")
        for d in devices
    )


def select_device(device: str = "auto") -> Any:
    """The ``OrtEpDevice`` of fp8ort's EP for ``device`` ('auto' = the first GPU if the EP offers one, else CPU)."""
    if not isinstance(device, str):
        raise TypeError(f"device must be a string; got {type(device).__name__}: {_DEVICE_HELP}")
    devices = ep_devices()
    cpus = [d for d in devices if dict(d.ep_metadata).get("fp8ort.device") == "cpu"]
    gpus = sorted((d for d in devices if dict(d.ep_metadata).get("fp8ort.device") == "gpu"), key=_gpu_ordinal)
    spec = device.strip().lower()
    if spec == "auto":
        chosen = gpus[:1] or cpus[:1]
    elif spec == "cpu":
        chosen = cpus[:1]
    elif spec == "gpu" or spec.startswith("gpu:"):
        ordinal = 0
        if spec.startswith("gpu:"):
            try:
                ordinal = int(spec[4:])
            except ValueError:
                raise ValueError(f"device={device!r}: the GPU ordinal must be an integer; {_DEVICE_HELP}") from None
        chosen = [d for d in gpus if _gpu_ordinal(d) == ordinal][:1]
        if not chosen:
            from ._library import backend

            build = backend()
            why = (
                "this libfp8ort.so was built without a GPU backend (FP8ORT_GPU=none); rebuild with "
                "FP8ORT_GPU=cuda or hip"
                if build == "none"
                else f"the library ({build} build) found no such GPU on this machine"
            )
            raise RuntimeError(f"device={device!r}: {EP_NAME} offers {_describe(devices)}; {why}")
    else:
        raise ValueError(f"device={device!r} is not a device; {_DEVICE_HELP}")
    if not chosen:
        raise RuntimeError(f"{EP_NAME} offers no device for {device!r} (offered: {_describe(devices)})")
    return chosen[0]


def _model_arg(model: str | os.PathLike | bytes | onnx.ModelProto) -> str | bytes:
    if isinstance(model, onnx.ModelProto):
        return model.SerializeToString()
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"model {path!r} does not exist")
        return path
    raise TypeError(f"model must be a path, bytes or onnx.ModelProto; got {type(model).__name__}")


class InferenceSession(ort.InferenceSession):
    """An ``onnxruntime.InferenceSession`` whose nodes run on fp8ort's execution provider where it has kernels.

    ``device``: 'auto' (GPU if the EP offers one, else CPU), 'cpu', 'gpu' or 'gpu:N'. Nodes the EP has no kernel
    for run on ORT's CPU EP with a ``PlacementWarning`` naming them; ``strict=True`` raises instead.
    ``graph_capture``: capture the run as a GPU graph (GPU device, onnxruntime >= 1.26). ``sess_options`` is
    modified (the EP is appended to it): pass a fresh one per session. Other keyword arguments go to
    ``onnxruntime.InferenceSession``.
    """

    def __init__(
        self,
        model: str | os.PathLike | bytes | onnx.ModelProto,
        device: str = "auto",
        graph_capture: bool = False,
        strict: bool = False,
        sess_options: ort.SessionOptions | None = None,
        provider_options: Mapping[str, str] | None = None,
        **kw: Any,
    ) -> None:
        check_ort_version()
        if "providers" in kw:
            raise ValueError("fp8ort.InferenceSession picks its providers itself; pass device=... instead of providers")
        ep_device = select_device(device)
        kind = dict(ep_device.ep_metadata).get("fp8ort.device", "cpu")
        options = {str(k): str(v) for k, v in (provider_options or {}).items()}
        if graph_capture:
            if kind != "gpu":
                raise ValueError(f"graph_capture=True needs a GPU device; device={device!r} selected the CPU")
            if ort_version() < _GRAPH_CAPTURE_MIN_ORT:
                raise RuntimeError(f"graph capture on a plugin EP needs onnxruntime >= 1.26; found {ort.__version__}")
            options["enable_graph_capture"] = "1"
        so = sess_options if sess_options is not None else ort.SessionOptions()
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        so.add_provider_for_devices([ep_device], options)
        # ORT's Python session would otherwise retry on the CPU EP alone when the EP fails, hiding the error.
        kw["enable_fallback"] = 0
        super().__init__(_model_arg(model), so, **kw)
        self.device = f"gpu:{_gpu_ordinal(ep_device)}" if kind == "gpu" else "cpu"
        self.ep_device = ep_device
        self.placement: dict[str, str] = {}
        self.op_types: dict[str, str] = {}
        for sub in self.get_provider_graph_assignment_info():
            for node in sub.get_nodes():
                op_type = (f"{node.domain}." if node.domain else "") + node.op_type
                name = node.name or f"<unnamed {op_type} #{len(self.placement)}>"
                self.placement[name] = sub.ep_name
                self.op_types[name] = op_type
        elsewhere = {n: ep for n, ep in self.placement.items() if ep != EP_NAME}
        if elsewhere:
            ops = sorted({self.op_types[n] for n in elsewhere})
            msg = (
                f"{len(elsewhere)} of {len(self.placement)} nodes do not run on {EP_NAME} ({self.device}): "
                f"no kernel for {', '.join(ops)}; they run on {', '.join(sorted(set(elsewhere.values())))}"
            )
            if strict:
                raise RuntimeError(msg + " (strict=True)")
            warnings.warn(msg, PlacementWarning, stacklevel=2)

    def nodes_on_ep(self) -> list[str]:
        """Names of the nodes ORT assigned to fp8ort's execution provider."""
        return [n for n, ep in self.placement.items() if ep == EP_NAME]
