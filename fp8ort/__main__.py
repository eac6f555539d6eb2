"""``python -m fp8ort``: print the diagnostic (library path, ONNX Runtime version, devices)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["info"]))
