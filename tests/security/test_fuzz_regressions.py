"""Replays the fuzzers' findings (issue 14): every input under ``tests/fuzz/crashers/<target>/`` goes through the
fuzz target again. A finding still listed in ``tests/fuzz/known_findings.txt`` is an open bug (xfail, with the
exception it still raises); once it no longer reproduces the test fails until its line is deleted, and then it
guards against the bug's return. A file is named ``<exception type>--<file>[--<what>].bin`` after the finding's
key. Native inputs crash only under the sanitizers (tools/sanitize.sh runs this file too); elsewhere they must
still load or fail cleanly.

Also checks that the fuzz harnesses run, and find a planted bug, in a short bounded run of each.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz import _driver

ROOT = Path(__file__).resolve().parents[2]
CRASHERS = ROOT / "tests" / "fuzz" / "crashers"
SMOKE_TIME_S = 5


def _inputs(target: str) -> list[Path]:
    return sorted((CRASHERS / target).glob("*.bin"))


def _key(path: Path) -> str:
    kind, where = path.name[: -len(".bin")].split("--")[:2]  # a third part, if any, tells inputs apart
    return f"{kind} at {where}"


def _verdict(target: str, path: Path, error: BaseException | None) -> None:
    known = _driver.known_findings(target)
    key = _key(path)
    if error is None:
        if key in known:
            pytest.fail(f"{path.name} no longer reproduces {key}: delete its line in tests/fuzz/known_findings.txt")
        return
    got = _driver._finding_key(error)
    if key in known and got == key:
        pytest.xfail(f"open finding {key} ({known[key]})")
    raise error


@pytest.mark.parametrize("path", _inputs("fuzz_quantize"), ids=lambda p: p.name)
def test_quantize_finding(path, library, monkeypatch):
    monkeypatch.setenv("FP8ORT_LIBRARY", library)
    from tests.fuzz import fuzz_quantize

    error = None
    try:
        fuzz_quantize.target(path.read_bytes())
    except Exception as exc:  # judged by _verdict
        error = exc
    _verdict("fuzz_quantize", path, error)


@pytest.mark.parametrize("path", _inputs("fuzz_native"), ids=lambda p: p.name)
def test_native_finding(path, library, monkeypatch):
    monkeypatch.setenv("FP8ORT_LIBRARY", library)
    from tests.fuzz import fuzz_native

    error = None
    try:
        fuzz_native.target(path.read_bytes())  # in the worker process: a crash is a Crash here
    except Exception as exc:
        error = exc
    finally:
        fuzz_native._WORKER.stop()
    _verdict("fuzz_native", path, error)


def test_every_known_finding_has_an_input():
    for target in ("fuzz_quantize", "fuzz_native"):
        have = {_key(p) for p in _inputs(target)}
        missing = set(_driver.known_findings(target)) - have
        assert not missing, f"known_findings.txt lists {missing} for {target} without an input in crashers/{target}/"


def _fuzz(module: str, tmp_path: Path, library: str, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, FP8ORT_LIBRARY=library, PYTHONHASHSEED="0")
    cmd = [sys.executable, "-m", module, "--no-atheris", "--time", str(SMOKE_TIME_S), "--seed", "1"]
    return subprocess.run(
        [*cmd, "--crash-dir", str(tmp_path), *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("module", ["tests.fuzz.fuzz_quantize", "tests.fuzz.fuzz_native"])
def test_fuzzer_runs_bounded(module, tmp_path, library):
    """A short run ends by itself, runs inputs, and finds nothing that is not already known."""
    proc = _fuzz(module, tmp_path, library)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert " inputs in " in out and " 0 distinct finding(s)" in out, out[-3000:]


def test_fuzzer_finds_a_planted_crash(tmp_path, library, monkeypatch):
    """The native harness sees a worker that dies: FP8ORT_FUZZ_PLANT=1 makes the worker abort after every model
    that runs (the seed model does), as a crash in the library would."""
    monkeypatch.setenv("FP8ORT_FUZZ_PLANT", "1")
    proc = _fuzz("tests.fuzz.fuzz_native", tmp_path, library)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "FINDING Crash" in out and "signal 6" in out, out[-3000:]
    assert list(tmp_path.glob("crash-*")), "no crash file written"
