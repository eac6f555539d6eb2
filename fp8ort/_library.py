"""Where the native library lives, and registering it with ONNX Runtime."""

from __future__ import annotations

import gc
import os
from pathlib import Path

EP_NAME = "Fp8OrtExecutionProvider"
_LIB_NAME = "libfp8ort.so"
_registered: set[str] = set()


def get_library_path() -> str:
    """Path of ``libfp8ort.so``; the ``FP8ORT_LIBRARY`` environment variable overrides it (dev builds)."""
    override = os.environ.get("FP8ORT_LIBRARY")
    if override:
        if not Path(override).is_file():
            raise FileNotFoundError(f"FP8ORT_LIBRARY={override!r} does not name a file; unset it or fix the path")
        return str(Path(override).resolve())
    path = Path(__file__).resolve().parent / _LIB_NAME
    if not path.is_file():
        # A source checkout imported ahead of the installed package (pytest from the repository root, say):
        # use the library of the installed distribution.
        try:
            from importlib.metadata import PackageNotFoundError, distribution

            installed = Path(distribution("fp8ort").locate_file(f"fp8ort/{_LIB_NAME}"))
            if installed.is_file():
                return str(installed.resolve())
        except (PackageNotFoundError, OSError):
            pass
        raise FileNotFoundError(
            f"{path} is missing: fp8ort was not built. Install it with `pip install .` from the source tree, "
            "or point FP8ORT_LIBRARY at a dev build of libfp8ort.so"
        )
    return str(path)


def get_ep_name() -> str:
    """Name under which the plugin execution provider registers."""
    return EP_NAME


def get_ep_names() -> list[str]:
    """All execution-provider names the library offers."""
    return [EP_NAME]


MIN_ORT_VERSION = (1, 24)


def ort_version() -> tuple[int, int]:
    """(major, minor) of the installed onnxruntime."""
    import onnxruntime as ort

    parts = ort.__version__.split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


def check_ort_version() -> None:
    """Raise RuntimeError when onnxruntime is too old for the plugin execution provider."""
    import onnxruntime as ort

    if ort_version() < MIN_ORT_VERSION:
        need = ".".join(map(str, MIN_ORT_VERSION))
        raise RuntimeError(
            f"fp8ort's execution provider needs onnxruntime >= {need} (plugin-EP kernel registry); found "
            f"onnxruntime {ort.__version__}. Upgrade it: pip install -U 'onnxruntime>={need}'"
        )


def register(registration_name: str = "fp8ort") -> str:
    """Register the library as a plugin-EP library with onnxruntime (idempotent); returns the name used."""
    import onnxruntime as ort

    check_ort_version()
    if registration_name not in _registered:
        ort.register_execution_provider_library(registration_name, get_library_path())
        _registered.add(registration_name)
    return registration_name


def unregister(registration_name: str = "fp8ort") -> bool:
    """Unregister a library registered by ``register`` (sessions already created keep working); True if it was."""
    import onnxruntime as ort

    if registration_name not in _registered:
        return False
    # Objects already unreachable but not yet collected (a session or its options held by a traceback in a reference
    # cycle) go now, while the library is still registered: onnxruntime crashed when the garbage collector released
    # such objects after the unregistration (a segmentation fault in the test suite on a clean checkout).
    gc.collect()
    ort.unregister_execution_provider_library(registration_name)
    _registered.discard(registration_name)
    return True


def ep_devices() -> list:
    """The ``OrtEpDevice``s of fp8ort's execution provider (registers the library first)."""
    import onnxruntime as ort

    register()
    return [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]


def backend() -> str:
    """GPU backend the library was built with: ``none``, ``cuda`` or ``hip`` (from its EP devices' metadata)."""
    for d in ep_devices():
        value = dict(d.ep_metadata).get("fp8ort.backend")
        if value:
            return value
    raise RuntimeError(f"{get_library_path()} offers no {EP_NAME} device; it is not a fp8ort plugin-EP build")
