"""The fuzz loop shared by ``fuzz_quantize.py`` and ``fuzz_native.py``: atheris (libFuzzer) where it is
installed, else a bounded random mutation loop; both stop after a given time and write each finding as a
``crash-<sha1>`` file of the input bytes, which ``tests/security/test_fuzz_regressions.py`` replays once committed
under ``tests/fuzz/crashers/<target>/``.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import logging
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from . import _mutate

MAX_FINDINGS = 30  # the random loop stops after this many distinct findings


def parse_args(argv: list[str], default_time: int) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--time", type=int, default=default_time, help="seconds to fuzz (default %(default)s)")
    p.add_argument("--runs", type=int, default=0, help="stop after this many inputs (default: the time alone)")
    p.add_argument("--seed", type=int, default=None, help="random seed of the plain loop (default: fresh)")
    p.add_argument("--crash-dir", default="fuzz-crashes", help="where findings are written")
    p.add_argument("--no-atheris", action="store_true", help="the plain random loop even where atheris exists")
    p.add_argument("replay", nargs="*", help="input files to run once each instead of fuzzing")
    return p.parse_args(argv)


def _save(crash_dir: Path, data: bytes, why: str) -> Path:
    crash_dir.mkdir(parents=True, exist_ok=True)
    path = crash_dir / f"crash-{hashlib.sha1(data).hexdigest()}"
    path.write_bytes(data)
    path.with_name(path.name + ".txt").write_text(why)
    return path


def run(
    name: str,
    target: Callable[[bytes], None],
    seed_bytes: bytes,
    argv: list[str],
    default_time: int,
    coverage: bool = True,
) -> int:
    """Fuzz ``target`` (raises on a finding) for the time asked; 0 when nothing new was found, 1 otherwise.

    Findings listed in known_findings.txt (open bugs with an xfail regression test) are counted, not failed on.
    ``coverage=False``: the code under test runs in another process, where atheris sees no coverage (libFuzzer
    then shrinks its corpus to one 1-byte input and mutates that); the plain loop is used instead, whose inputs
    stay whole models.
    """
    args = parse_args(argv, default_time)
    logging.disable(logging.WARNING)  # onnx_ir warns about every malformed attribute; findings are exceptions
    crash_dir = Path(args.crash_dir)
    known = known_findings(name)
    seen_known: Counter[str] = Counter()

    def checked(data: bytes) -> None:
        try:
            target(data)
        except Exception as exc:
            key = _finding_key(exc)
            if key not in known:
                raise
            if not seen_known[key]:  # said at once: libFuzzer ends the process without running atexit hooks
                print(f"{name}: known finding ({known[key]}): {key}", flush=True)
            seen_known[key] += 1

    def report_known() -> None:
        for key, n in seen_known.most_common():
            print(f"{name}: known finding ({known[key]}): {key}: {n} input(s)")

    atexit.register(report_known)
    if args.replay:
        failed = 0
        for f in args.replay:
            try:
                target(Path(f).read_bytes())
                print(f"{name}: {f}: ok")
            except Exception as exc:
                failed += 1
                print(f"{name}: {f}: FINDING {_finding_key(exc)}\n{traceback.format_exc()}")
        return 1 if failed else 0
    seeds = [b"\x00" + seed_bytes, b"\x02" + seed_bytes, b"\x01\x00\x00\x00", b"\x01" + bytes(range(1, 40))]
    try:
        if args.no_atheris:
            raise ImportError
        import atheris
    except ImportError:
        return _plain_loop(name, checked, seed_bytes, seeds, args, crash_dir, "atheris not used")
    if not coverage:
        return _plain_loop(name, checked, seed_bytes, seeds, args, crash_dir, "no coverage across the process")
    print(f"{name}: atheris for {args.time} s (runs {args.runs or 'unbounded'}); findings in {crash_dir}/", flush=True)
    corpus = Path(tempfile.mkdtemp(prefix=f"{name}-corpus-"))
    for i, s in enumerate(seeds):
        (corpus / f"seed{i}").write_bytes(s)
    crash_dir.mkdir(parents=True, exist_ok=True)
    libfuzzer = [
        sys.argv[0],
        str(corpus),
        f"-max_total_time={args.time}",
        f"-artifact_prefix={crash_dir}/",
        "-timeout=60",
        "-rss_limit_mb=8192",  # above the harnesses' own address-space limits, which turn hostile sizes into errors
        "-max_len=65536",
        "-print_final_stats=1",
    ]
    if args.seed is not None:
        libfuzzer.append(f"-seed={args.seed}")
    if args.runs:
        libfuzzer.append(f"-runs={args.runs}")
    atheris.Setup(libfuzzer, checked)
    atheris.Fuzz()  # exits the process: 0 at the limit, non-zero with a crash-* file on a new finding
    return 0


def _finding_key(exc: BaseException) -> str:
    """One finding per exception type and the innermost fp8ort (or test) file it passed through: the same bug
    reached by many inputs counts once, and the key stays put while the code around it changes."""
    where = "?"
    for frame in traceback.extract_tb(exc.__traceback__):
        if "/fp8ort/" in frame.filename or "/tests/" in frame.filename:
            where = Path(frame.filename).name
    return f"{type(exc).__name__} at {where}"


KNOWN_FILE = Path(__file__).with_name("known_findings.txt")


def known_findings(name: str) -> dict[str, str]:
    """Finding keys of ``name`` recorded in known_findings.txt (open bugs, each with a regression test), with notes."""
    known = {}
    if KNOWN_FILE.is_file():
        for line in KNOWN_FILE.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            target, _, rest = line.partition(" ")
            key, _, note = rest.partition("#")
            if target == name:
                known[key.strip()] = note.strip()
    return known


def _plain_loop(name, target, seed_bytes, seeds, args, crash_dir, why: str) -> int:
    seconds = args.time
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rnd = random.Random(seed)
    print(f"{name}: random mutation loop ({why}) for {seconds} s, seed {seed}; findings in {crash_dir}/")
    crash_dir.mkdir(parents=True, exist_ok=True)
    last = crash_dir / "last-input"
    end = time.monotonic() + seconds
    runs, found = 0, {}
    queue = list(seeds)
    while time.monotonic() < end and len(found) < MAX_FINDINGS and not (args.runs and runs >= args.runs):
        data = queue.pop() if queue else _mutate.random_input(seed_bytes, rnd)
        last.write_bytes(data)  # what killed the process, if something does
        runs += 1
        try:
            target(data)
        except Exception as exc:
            key = _finding_key(exc)
            if key not in found:
                path = _save(crash_dir, data, f"{key}\n{traceback.format_exc()}")
                found[key] = path
                first = str(exc).splitlines()[0][:300] if str(exc) else ""
                print(f"{name}: FINDING {key}: {first}\n  input: {path}", flush=True)
    last.unlink(missing_ok=True)
    took = seconds - max(0.0, end - time.monotonic())
    print(f"{name}: {runs} inputs in {took:.0f} s (seed {seed}), {len(found)} distinct finding(s)")
    return 1 if found else 0
