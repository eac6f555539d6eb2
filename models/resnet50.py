"""Write ResNet-50 (random weights, built with onnx helpers, no torch) and calibration/eval inputs.

python models/resnet50.py -o resnet50.onnx [--calibration calib.npz --images 32]
"""

from __future__ import annotations

import argparse

import numpy as np
import onnx

from fp8ort import zoo


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("-o", "--output", default="resnet50.onnx")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calibration", help="also write this many synthetic images to an .npz (input name 'input')")
    p.add_argument("--images", type=int, default=32)
    args = p.parse_args()
    onnx.save(zoo.resnet50(args.seed), args.output)
    print(f"wrote {args.output}")
    if args.calibration:
        np.savez(args.calibration, input=zoo.synthetic_images(args.images, seed=args.seed))
        print(f"wrote {args.calibration}")


if __name__ == "__main__":
    main()
