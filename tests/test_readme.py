"""The README's first example runs and says what it claims."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_first_example_runs(library, monkeypatch):
    monkeypatch.setenv("FP8ORT_LIBRARY", library)
    text = README.read_text()
    block = text.split("## A first FP8 model", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert "bit-exact with the NumPy reference: True" in out.getvalue()
