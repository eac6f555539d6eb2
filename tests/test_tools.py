"""The GPU-run helper tools' parsing, which needs no GPU (tools/racecheck_summary.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent / "tools"
sys.path.insert(0, str(TOOLS))

import racecheck_summary  # noqa: E402

VENDOR = """========= Error: Potential WAR hazard detected at __shared__ 0x4030488 in block (4,4,0) :
=========     Read Thread (127,0,0) at nvjet_sm90_qqsss_64x24_128x16_2x4_h_bz_algo2_TNT+0xbc0
=========     Write Thread (256,0,0) at nvjet_sm90_qqsss_64x24_128x16_2x4_h_bz_algo2_TNT+0x3230
=========     Current Value : 10, Incoming Value : 10
"""
OURS = """========= Error: Potential RAW hazard detected at __shared__ 0x10 in block (0,0,0) :
=========     Write Thread (3,0,0) at void depthwise_kernel<17, 8>(const unsigned char *)+0x40
=========     Read Thread (35,0,0) at void depthwise_kernel<17, 8>(const unsigned char *)+0x80
"""
LAUNCHED_BY_VENDOR = """========= Error: Potential WAW hazard detected at __shared__ 0x20 in block (1,0,0) :
=========     Write Thread (0,0,0) at gemm_internal_kernel+0x10
=========     Write Thread (64,0,0) at gemm_internal_kernel+0x20
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame:  [0x32c9090] in libcublasLt.so.13
"""


def test_hazards_are_counted_by_owner_and_kernel():
    hazards = racecheck_summary.parse(VENDOR * 3 + OURS + LAUNCHED_BY_VENDOR)
    by_owner, by_kernel = racecheck_summary.summarize(hazards)
    assert by_owner == {"vendor": 4, "fp8ort": 1}
    assert by_kernel[("vendor", "WAR", "nvjet_sm90_qqsss_64x24_128x16_2x4_h_bz_algo2_TNT")] == 3
    assert by_kernel[("fp8ort", "RAW", "void depthwise_kernel<17, 8>(const unsigned char *)")] == 1
    assert by_kernel[("vendor", "WAW", "gemm_internal_kernel")] == 1


def test_exit_status_fails_only_on_our_hazards(tmp_path):
    clean, dirty = tmp_path / "clean.log", tmp_path / "dirty.log"
    clean.write_text(VENDOR + "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
    dirty.write_text(VENDOR + OURS)
    run = [sys.executable, str(TOOLS / "racecheck_summary.py")]
    ok = subprocess.run([*run, str(clean)], capture_output=True, text=True)
    bad = subprocess.run([*run, str(dirty)], capture_output=True, text=True)
    assert ok.returncode == 0 and "vendor: 1" in ok.stdout and "fp8ort: 0" in ok.stdout
    assert bad.returncode == 1 and "fp8ort: 1" in bad.stdout
