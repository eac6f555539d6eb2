#!/usr/bin/env bash
# Build libfp8ort.so (CPU only) with AddressSanitizer + UndefinedBehaviorSanitizer and run tests on it with the
# sanitizer runtime preloaded into Python, leak checking on.
#
# - CMake: -DFP8ORT_SANITIZE=address,undefined (-fsanitize=address,undefined -fno-omit-frame-pointer
#   -fno-sanitize-recover=undefined), RelWithDebInfo, in its own build folder.
# - Runtime: LD_PRELOAD=libasan.so (it must come first in the process), PYTHONMALLOC=malloc (so that LSan sees the
#   pointers Python objects hold, which pymalloc's arenas would hide), ASAN_OPTIONS with detect_leaks=1 and a
#   log_path: every process (pytest and the children its tests start) writes its report to its own file.
#   exitcode=0: a leak at exit does not fail a child a test expects to exit 0; the logs are judged instead.
# - Leaks: tools/lsan.supp suppresses the Python host's exit-time leaks by function name (each one documented);
#   tools/lsan_filter.py then fails on any sanitizer error and on any leak with a frame in libfp8ort.so, and lists
#   the rest (onnxruntime's own, unsymbolised) without failing.
#
# Usage: tools/sanitize.sh [PYTEST ARGS...]   (default: the tests below, which drive our native code through the
#        custom-op route and the plugin EP's CPU device)
#        tools/sanitize.sh --exec COMMAND...   (build, then run COMMAND with the sanitizer runtime, leaks unchecked)
# Env:   PYTHON (default python3; needs onnxruntime, pytest, the test extras), FP8ORT_SAN_BUILD (default build-asan),
#        FP8ORT_ORT_INCLUDE_DIR (else CMake fetches the headers), cmake and ninja on PATH, gcc/g++.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
build="${FP8ORT_SAN_BUILD:-build-asan}"
default_tests=(
  tests/test_library.py            # both routes load; registration
  tests/test_cpu_kernels.py        # custom-op route: every com.fp8ort CPU kernel against the reference
  tests/ep/test_plugin_ep.py       # plugin EP, CPU device: every op, registration cycles
  tests/ep/test_onnx_ops.py        # plugin EP, CPU device: the standard ONNX ops
  tests/security/test_bad_models.py  # the bad-input corpus on both routes (in child processes)
  tests/security/test_concurrency.py # threads, many sessions, create/destroy and register/unregister loops
  tests/security/test_fuzz_regressions.py::test_native_finding  # the native fuzzer's findings (UBSan ones)
)
exec_mode=0
if [[ "${1:-}" == "--exec" ]]; then exec_mode=1; shift; fi
tests=("$@")
((${#tests[@]})) || tests=("${default_tests[@]}")

command -v g++ >/dev/null || { echo "sanitize.sh: g++ is needed (apt-get install build-essential)" >&2; exit 2; }
asan_rt="$(gcc -print-file-name=libasan.so)"
[[ -f "$asan_rt" ]] || { echo "sanitize.sh: $asan_rt missing (apt-get install libasan8 / gcc)" >&2; exit 2; }
# libstdc++ right after it: ASan's __cxa_throw interceptor looks the real one up when it starts, and python3 does
# not link libstdc++ (without it the first C++ exception, inside onnxruntime, fails an ASan CHECK).
cxx_rt="$(g++ -print-file-name=libstdc++.so.6)"

cfg=(-S . -B "$build" -DFP8ORT_GPU=none -DFP8ORT_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo)
command -v ninja >/dev/null && cfg+=(-G Ninja)
[[ -n "${FP8ORT_ORT_INCLUDE_DIR:-}" ]] && cfg+=("-DFP8ORT_ORT_INCLUDE_DIR=$FP8ORT_ORT_INCLUDE_DIR")
start=$SECONDS
mkdir -p "$build"
cmake "${cfg[@]}" >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)"
echo "sanitize.sh: built $build/libfp8ort.so in $((SECONDS - start)) s"

if ((exec_mode)); then
  # Any command on the sanitized library (the native fuzzer, say): reports on stderr, no leak check (a fuzz worker
  # is killed, never exits), a finding exits non-zero.
  ((${#tests[@]})) || { echo "sanitize.sh --exec needs a command" >&2; exit 2; }
  export FP8ORT_LIBRARY="$root/$build/libfp8ort.so" PYTHONMALLOC=malloc FP8ORT_SANITIZER_RUN=1
  export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:handle_segv=0" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  LD_PRELOAD="$asan_rt $cxx_rt" "${tests[@]}"
  exit $?
fi

logs="$build/sanitizer-logs"
rm -rf "$logs" && mkdir -p "$logs"
export FP8ORT_LIBRARY="$root/$build/libfp8ort.so"
# ASan aborts on an operator new larger than its allocator's limit (1 TiB) instead of throwing std::bad_alloc;
# the bad-input case that allocates a 2^48-byte output is therefore left out here (the normal run has it).
export FP8ORT_BAD_CASES_SKIP="conv-output-too-large-for-memory"
export PYTHONMALLOC=malloc
export FP8ORT_SANITIZER_RUN=1  # tests/security/test_concurrency.py: RSS bounds off (ASan keeps freed memory)
# handle_segv=0: a segfault kills the process with its signal, as without ASan, so that the tests that watch
# their children's exit status (tests/security's crash harness) still see it; a crash of pytest itself leaves
# no junit report.
export ASAN_OPTIONS="detect_leaks=1:log_path=$root/$logs/asan:exitcode=0:halt_on_error=1:handle_segv=0:\
malloc_context_size=30"
export LSAN_OPTIONS="suppressions=$root/tools/lsan.supp:print_suppressions=0"
# UBSan (GCC's own runtime, libubsan) reports on stderr and exits 1 at the first finding
# (-fno-sanitize-recover=undefined): pytest, or the test that watches the child, fails.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
rc=0
# exitcode=0 means a process killed by a sanitizer exits 0 too: the junit report pytest writes only when it ends
# shows that the run got to its end, and the filter fails on any report in the logs that is not a leak.
junit="$build/sanitize-junit.xml"
rm -f "$junit"
LD_PRELOAD="$asan_rt $cxx_rt" "$python" -m pytest -q -p no:cacheprovider --junitxml="$junit" "${tests[@]}" || rc=$?
echo "sanitize.sh: pytest exit status $rc after $((SECONDS - start)) s"
[[ -s "$junit" ]] || { echo "sanitize.sh: FAIL: pytest did not finish (no $junit): see $logs" >&2; rc=1; }
"$python" tools/lsan_filter.py "$logs" || rc=1
exit "$rc"
