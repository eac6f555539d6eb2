"""The real PP-OCRv4 text recognizer and detector (from the ``rapidocr-onnxruntime`` wheel), rendered test data, and
CTC greedy decoding.

    pip install --no-deps rapidocr-onnxruntime==1.4.4 && pip install Pillow

``recognizer_path()`` / ``detector_path()`` give the ONNX files shipped in the wheel; ``render_lines`` draws text
lines (Pillow's scalable default font: strings, sizes, offsets, contrast and noise vary) preprocessed as RapidOCR
does (height 48, [-1, 1], right-padded to a fixed width); ``render_pages`` draws pages of several lines for the
detector (mean/std 0.5, sides multiples of 32); ``ctc_decode`` turns the recognizer's per-step class probabilities
into strings with the model's own character list (``metadata_props['character']``).
"""

from __future__ import annotations

import importlib.util
import os
import string

import numpy as np

PIP_HINT = "pip install --no-deps rapidocr-onnxruntime==1.4.4"
REC_FILE = "ch_PP-OCRv4_rec_infer.onnx"
DET_FILE = "ch_PP-OCRv4_det_infer.onnx"
REC_HEIGHT = 48  # the recognizer's input height (RapidOCR rec_img_shape [3, 48, 320])
REC_WIDTH = 320
PAGE_SIDE = 320  # detector pages: small enough for a 2-core CPU, a multiple of 32
BLANK = 0  # CTC blank class
WORDS = (
    "invoice",
    "total",
    "amount",
    "date",
    "order",
    "number",
    "customer",
    "address",
    "street",
    "city",
    "phone",
    "email",
    "price",
    "quantity",
    "item",
    "shipping",
    "tax",
    "balance",
    "account",
    "payment",
    "receipt",
    "station",
    "platform",
    "exit",
    "north",
    "south",
    "open",
    "closed",
    "monday",
    "friday",
    "hello",
    "world",
    "model",
    "layer",
    "quantize",
    "float",
    "kernel",
    "batch",
    "tensor",
    "vector",
)


class OcrModelMissing(ImportError):
    """The rapidocr-onnxruntime wheel (which ships the PP-OCRv4 ONNX files) is not installed."""


def _models_dir() -> str:
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    if spec is None or spec.origin is None:
        raise OcrModelMissing(f"the PP-OCRv4 models come from the rapidocr-onnxruntime wheel; install it: {PIP_HINT}")
    return os.path.join(os.path.dirname(spec.origin), "models")


def _model_file(name: str) -> str:
    path = os.path.join(_models_dir(), name)
    if not os.path.isfile(path):
        raise OcrModelMissing(f"{path} is missing from the installed rapidocr-onnxruntime; reinstall it: {PIP_HINT}")
    return path


def recognizer_path() -> str:
    """Path of ``ch_PP-OCRv4_rec_infer.onnx`` (input ``x`` [N, 3, 48, W], output [N, W/8, classes] softmax)."""
    return _model_file(REC_FILE)


def detector_path() -> str:
    """Path of ``ch_PP-OCRv4_det_infer.onnx`` (input ``x`` [N, 3, H, W], output [N, 1, H, W] text probability)."""
    return _model_file(DET_FILE)


def character_list(model_path: str | None = None) -> list[str]:
    """CTC classes of the recognizer: blank, the dictionary in its ``character`` metadata, then a space."""
    import onnx

    model = onnx.load(model_path or recognizer_path(), load_external_data=False)
    meta = {p.key: p.value for p in model.metadata_props}
    if "character" not in meta:
        raise ValueError(f"{model_path} has no 'character' metadata: not a RapidOCR PP-OCR recognizer")
    return ["blank", *meta["character"].splitlines(), " "]


def ctc_decode(probs: np.ndarray, chars: list[str]) -> list[str]:
    """Greedy CTC: per-step argmax, merge repeats, drop blanks. ``probs``: [N, T, classes]."""
    idx = np.asarray(probs).argmax(axis=2)
    out = []
    for row in idx:
        keep = np.ones(len(row), bool)
        keep[1:] = row[1:] != row[:-1]
        out.append("".join(chars[i] for i in row[keep & (row != BLANK)]))
    return out


def random_text(rng: np.random.Generator) -> str:
    """A line of 1-4 words, numbers, prices or codes."""
    parts = []
    for _ in range(int(rng.integers(1, 5))):
        kind = rng.random()
        if kind < 0.5:
            w = str(rng.choice(WORDS))
            parts.append(w.capitalize() if rng.random() < 0.3 else w.upper() if rng.random() < 0.1 else w)
        elif kind < 0.7:
            parts.append(str(int(rng.integers(0, 100000))))
        elif kind < 0.85:
            parts.append(f"{rng.uniform(0, 1000):.2f}")
        else:
            alphabet = string.ascii_uppercase + string.digits
            parts.append("".join(rng.choice(list(alphabet), int(rng.integers(3, 8)))))
    return " ".join(parts)


def _draw_line(text: str, rng: np.random.Generator):
    from PIL import Image, ImageDraw, ImageFont

    size = int(rng.integers(18, 40))
    font = ImageFont.load_default(size=size)
    left, top, right, bottom = font.getbbox(text)
    pad_x, pad_y = int(rng.integers(2, 12)), int(rng.integers(2, 10))
    w, h = right - left + 2 * pad_x, bottom - top + 2 * pad_y
    bg = int(rng.integers(170, 256))
    fg = int(rng.integers(0, max(bg - 100, 1)))
    tint = rng.integers(-20, 21, 3)
    img = Image.new("RGB", (w, h), tuple(int(np.clip(bg + t, 0, 255)) for t in tint))
    ImageDraw.Draw(img).text((pad_x - left + int(rng.integers(-1, 2)), pad_y - top), text, font=font, fill=(fg, fg, fg))
    return img


def _noisy(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    a = a.astype(np.float32) + rng.normal(0.0, rng.uniform(0.0, 12.0), a.shape).astype(np.float32)
    return np.clip(a, 0, 255)


def render_lines(n: int, seed: int, width: int = REC_WIDTH) -> tuple[np.ndarray, list[str]]:
    """``n`` rendered text lines as recognizer input [n, 3, 48, width] (float32 in [-1, 1], zero-padded on the
    right as RapidOCR pads a batch) and the strings drawn."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = np.zeros((n, 3, REC_HEIGHT, width), np.float32)
    texts = []
    for i in range(n):
        text = random_text(rng)
        img = _draw_line(text, rng)
        while img.width * REC_HEIGHT / img.height > width:  # too long for the fixed width: shorten
            text = text.rsplit(" ", 1)[0] if " " in text else text[: max(len(text) * 3 // 4, 1)]
            img = _draw_line(text, rng)
        w = max(int(np.ceil(img.width * REC_HEIGHT / img.height)), 1)
        a = _noisy(np.asarray(img.resize((w, REC_HEIGHT), Image.BILINEAR)), rng)
        out[i, :, :, :w] = (a.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5
        texts.append(text)
    return out, texts


def render_pages(n: int, seed: int, side: int = PAGE_SIDE) -> np.ndarray:
    """``n`` pages [n, 3, side, side] of several text lines at random places, detector-normalized (mean/std 0.5)."""
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(seed)
    out = np.zeros((n, 3, side, side), np.float32)
    for i in range(n):
        bg = tuple(int(v) for v in rng.integers(160, 256, 3))
        img = Image.new("RGB", (side, side), bg)
        draw = ImageDraw.Draw(img)
        y = int(rng.integers(0, 20))
        while y < side - 16:
            size = int(rng.integers(12, 32))
            font = ImageFont.load_default(size=size)
            fg = tuple(int(v) for v in rng.integers(0, 90, 3))
            draw.text((int(rng.integers(0, side // 3)), y), random_text(rng), font=font, fill=fg)
            y += int(size * rng.uniform(1.3, 2.5))
        a = _noisy(np.asarray(img), rng)
        out[i] = (a.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5
    return out


def with_input_shape(path: str, height: int | None, width: int | None):
    """The model with its input's spatial dims fixed (batch stays dynamic), so that shape inference gives every
    Conv/MatMul its true per-sample MAC count (with dynamic dims a Conv counts one output pixel)."""
    import onnx

    model = onnx.load(path)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    for d, v in ((dims[2], height), (dims[3], width)):
        if v is not None:
            d.ClearField("dim_param")
            d.dim_value = v
    return model
