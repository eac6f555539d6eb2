#!/usr/bin/env bash
# Build fp8ort for AMD GPUs (FP8ORT_GPU=hip) without ROCm and check the GPU code it carries. Nothing here runs on
# an AMD GPU: every AMD target is compiled and ISA-checked only.
#
# 1. CMake's FP8ORT_GPU=hip build of the whole libfp8ort.so with Debian 12's clang-19 and lld-19: hip_kernels/*.hip
#    as full HIP compiles (host objects with the device code of gfx1100, gfx942, gfx1200 and gfx1201 embedded) and
#    ep_src/**/*.cc with FP8ORT_WITH_GPU and FP8ORT_GPU_HIP, linked against the HIP runtime libamdhip64.so.6 of Debian
#    sid's libamdhip64-6. That library is only linked against: it is never loaded here, and its own dependencies
#    (HSA runtime, comgr; glibc >= 2.38) are not fetched. HIP headers and the hip-lang CMake package come from sid's
#    libamdhip64-dev, device bitcode from trixie's rocm-device-libs-17 (built for LLVM 17, readable by clang-19;
#    it lacks gfx1200/gfx1201's oclc_isa_version file, which is derived from gfx1100's).
# 2. Checks of the library: it exports only RegisterCustomOps, CreateEpFactories and ReleaseEpFactory
#    (ep_src/exports.map, as the CPU and CUDA builds), it needs libamdhip64.so.6, and the device code bundled in it
#    holds, for each target:
#      gfx942           v_mfma_*fp8*              FP8 MFMA (FNUZ on MI300)
#      gfx1200, gfx1201 v_wmma_*fp8*              FP8 WMMA (OCP, RDNA4)
#      gfx1100          v_wmma_f32_16x16x16_f16   RDNA3 has no FP8 instructions: FP8 is decoded to f16
#    and the hipBLASLt route is compiled in but not linked (dlopen at run time); hip_kernels/fp8_hipblaslt_api.h,
#    fp8ort's own declarations of hipBLASLt's ABI, is compared with sid's libhipblaslt-dev headers
#    (tests/gpu/check_hipblaslt_abi.cc).
# 3. gfx950 (MI350): LLVM 19 does not know it. Debian 12 also ships clang-22 (bookworm-security), which compiles
#    hip_kernels/*.hip device-only for gfx950 with sid's rocm-device-libs-21 bitcode; its ISA must hold
#    v_mfma_*fp8* (the gfx942 mnemonic: gfx950 keeps the opcodes and reads their operands as OCP FP8). gfx950 is
#    therefore not in the library linked here; one compiler that knows all five targets (ROCm's clang, or clang-20+)
#    builds them into one library with CMake's default FP8ORT_HIP_ARCHS.
#
# Usage: tools/hip_check.sh   (needs cmake >= 3.28, ninja and python3 on PATH; installs the compilers with apt and
#        fetches the Debian packages above, so root and network the first time)
# Env:   FP8ORT_HIP_CACHE  where the Debian packages are unpacked (default ~/.cache/fp8ort-hip)
#        FP8ORT_HIP_JOBS   parallel compile jobs (default: the number of CPUs)
# Output: build/hip_check/: cmake/ (the build, cmake/libfp8ort.so), gfx950/ (its code objects), isa/ (disassembly
#        per target), *.log
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
self="$root/tools/hip_check.sh"
cache="${FP8ORT_HIP_CACHE:-$HOME/.cache/fp8ort-hip}"
jobs="${FP8ORT_HIP_JOBS:-$(nproc)}"
lib_targets=(gfx1100 gfx942 gfx1200 gfx1201)   # clang-19, linked into libfp8ort.so
new_target=gfx950                              # clang-22, device code only
out="$root/build/hip_check"
start=$SECONDS
mkdir -p "$cache" "$out"

die() { echo "hip_check: $*" >&2; exit 1; }
pattern_of() {
    case "$1" in
        gfx942 | gfx950) echo 'v_mfma_[a-z0-9_]*fp8' ;;
        gfx1200 | gfx1201) echo 'v_wmma_[a-z0-9_]*fp8' ;;
        gfx1100) echo 'v_wmma_f32_16x16x16_f16' ;;
        *) die "no ISA pattern for $1" ;;
    esac
}

# ---- tools ----------------------------------------------------------------------------------------------------
command -v cmake >/dev/null && command -v ninja >/dev/null && command -v python3 >/dev/null ||
    die "needs cmake (>= 3.28), ninja and python3 on PATH (pip install cmake ninja)"
cmake_version="$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')"
[ "$(printf '%s\n3.28.0\n' "$cmake_version" | sort -V | head -1)" = 3.28.0 ] ||
    die "cmake $cmake_version is too old: 3.28 is the first that finds the hip-lang package in Debian's" \
        "multiarch folder (pip install 'cmake>=3.28')"
apt_packages=(clang-19 lld-19 llvm-19 clang-tools-19 libclang-rt-19-dev clang-22 lld-22 llvm-22)
missing=()
for pkg in "${apt_packages[@]}"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "hip_check: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
export PATH="$PATH:/usr/lib/llvm-19/bin"   # clang-offload-bundler has no versioned name on PATH
command -v clang-offload-bundler >/dev/null || die "clang-offload-bundler missing (package clang-tools-19)"

# ---- Debian packages from other suites, through a private apt configuration (the system's lists stay as they are)
fetch_debs() {  # suite destdir package...
    local suite="$1" dest="$2" apt_dir="$cache/apt-$1"
    shift 2
    mkdir -p "$apt_dir/lists/partial" "$dest"
    echo "deb http://deb.debian.org/debian $suite main" >"$apt_dir/sources.list"
    local opts=(-oDir::Etc::SourceList="$apt_dir/sources.list" -oDir::Etc::SourceParts=/dev/null
                -oDir::State::Lists="$apt_dir/lists" -oAPT::Get::List-Cleanup=0 -oAPT::Sandbox::User=root)
    compgen -G "$apt_dir/lists/*_Packages*" >/dev/null || apt-get "${opts[@]}" update -qq
    local pkg
    for pkg in "$@"; do rm -f "$apt_dir/${pkg}"_*.deb; done
    # Stale lists name versions the mirror no longer has: refresh them once and retry.
    (cd "$apt_dir" && { apt-get "${opts[@]}" download "$@" >/dev/null 2>&1 ||
        { apt-get "${opts[@]}" update -qq && apt-get "${opts[@]}" download "$@" >/dev/null; }; })
    for pkg in "$@"; do dpkg -x "$apt_dir/${pkg}"_*.deb "$dest"; done
}

hip_root="$cache/hip/usr"   # include/hip, lib/x86_64-linux-gnu/{libamdhip64.so.6, cmake/hip-lang}
if ! compgen -G "$hip_root/lib/x86_64-linux-gnu/libamdhip64.so.6.*" >/dev/null ||
    [ ! -f "$hip_root/include/hip/hip_runtime.h" ]; then
    echo "hip_check: fetching libamdhip64-dev and libamdhip64-6 (sid)"
    rm -rf "$cache/hip"
    fetch_debs sid "$cache/hip" libamdhip64-dev libamdhip64-6   # one download: the same version
fi
hipblaslt_root="$cache/hipblaslt/usr"   # include/hipblaslt, include/hipblas-common: headers only
if [ ! -f "$hipblaslt_root/include/hipblaslt/hipblaslt.h" ] ||
    [ ! -f "$hipblaslt_root/include/hipblas-common/hipblas-common.h" ]; then
    echo "hip_check: fetching libhipblaslt-dev and libhipblas-common-dev (sid)"
    rm -rf "$cache/hipblaslt"
    fetch_debs sid "$cache/hipblaslt" libhipblaslt-dev libhipblas-common-dev
fi
bitcode_dir() { dirname "$(find "$1" -name ocml.bc 2>/dev/null | head -1)"; }
if [ -z "$(find "$cache/bitcode" -name ocml.bc 2>/dev/null | head -1)" ]; then
    echo "hip_check: fetching rocm-device-libs-17 (trixie)"
    fetch_debs trixie "$cache/bitcode" rocm-device-libs-17
fi
if [ -z "$(find "$cache/bitcode21" -name ocml.bc 2>/dev/null | head -1)" ]; then
    echo "hip_check: fetching rocm-device-libs-21 (sid)"
    fetch_debs sid "$cache/bitcode21" rocm-device-libs-21
fi
bc19="$(bitcode_dir "$cache/bitcode")"
bc22="$(bitcode_dir "$cache/bitcode21")"
# gfx12 needs oclc_isa_version_120x.bc, absent from the LLVM-17 bitcode: derive it from the gfx1100 file.
for v in 1200 1201; do
    if [ ! -f "$bc19/oclc_isa_version_$v.bc" ]; then
        llvm-dis-19 "$bc19/oclc_isa_version_1100.bc" -o - | sed "s/i32 11000/i32 ${v}0/" |
            llvm-as-19 -o "$bc19/oclc_isa_version_$v.bc"
    fi
done
[ -f "$bc22/oclc_isa_version_950.bc" ] || die "rocm-device-libs-21 has no gfx950 bitcode ($bc22)"
echo "hip_check: compilers and packages ready after $((SECONDS - start)) s"

# ---- 1. the library (CMake, clang-19) and 3. gfx950's device code (clang-22), compiled side by side ----------
build="$out/cmake"
hip_flags=(-nogpuinc -include __clang_hip_runtime_wrapper.h -isystem "$hip_root/include")
# -L and -fuse-ld are link flags; CMake's compiler check links with the HIP flags alone, so they go here too.
cmake_hip_flags="${hip_flags[*]} --rocm-device-lib-path=$bc19 -L$hip_root/lib/x86_64-linux-gnu -fuse-ld=lld-19"
# -Wno-pass-failed: unroll pragmas clang could not honour (fp8_mma.h's compute loop on gfx1100) are not errors.
cmake_hip_flags+=" -Wno-unused-command-line-argument -Wno-pass-failed -Werror=return-type"
archs="$(IFS=';'; echo "${lib_targets[*]}")"
# CMake keeps what it detected about the HIP compiler: a build made from another package folder starts afresh.
if [ -f "$build/CMakeCache.txt" ] &&
    ! grep -qx "CMAKE_HIP_COMPILER_ROCM_ROOT:[A-Z]*=$hip_root" "$build/CMakeCache.txt"; then
    rm -rf "$build"
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFP8ORT_GPU=hip \
    -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_HIP_COMPILER=clang++-19 -DCMAKE_HIP_COMPILER_ROCM_ROOT="$hip_root" \
    -DCMAKE_HIP_FLAGS="$cmake_hip_flags" -DFP8ORT_HIP_ARCHS="$archs" >"$out/configure.log" 2>&1 ||
    { cat "$out/configure.log" >&2; die "CMake configure (FP8ORT_GPU=hip) failed"; }
ninja -C "$build" -j "$jobs" >"$out/build.log" 2>&1 &
build_pid=$!

# gfx950 at low priority: it fills the CPU time the library build leaves idle. HIP 6.4's headers read
# __AMDGCN_WAVEFRONT_SIZE, which LLVM 22 no longer defines; gfx9 runs wave64.
mkdir -p "$out/$new_target"
(
    for src in "$root"/hip_kernels/*.hip; do
        co="$out/$new_target/$(basename "$src" .hip).co"
        # up to date: newer than every kernel source and header, and than this script
        [ -f "$co" ] && [ -z "$(find "$root/hip_kernels" "$self" -newer "$co" -print -quit)" ] && continue
        nice -n 10 clang++-22 -x hip -std=c++17 --offload-arch="$new_target" "${hip_flags[@]}" \
            --rocm-device-lib-path="$bc22" -D__AMDGCN_WAVEFRONT_SIZE=64 -I "$root/hip_kernels" \
            -D__HIP_PLATFORM_AMD__ --cuda-device-only --no-gpu-bundle-output -O3 -Wall -Wno-pass-failed \
            -Werror=return-type -c "$src" -o "$co" || { rm -f "$co"; exit 1; }
    done
) >"$out/$new_target.log" 2>&1 &
new_pid=$!

status=0
wait "$build_pid" || status=1
grep -v -E '^\[[0-9]+/[0-9]+\] ' "$out/build.log" || true   # compiler diagnostics, without ninja's progress
[ "$status" -eq 0 ] || { wait "$new_pid" || true; die "the FP8ORT_GPU=hip build failed (log: $out/build.log)"; }
lib="$build/libfp8ort.so"
echo "hip_check: linked $lib (clang-19/lld-19; ${lib_targets[*]}) after $((SECONDS - start)) s"

# ---- 2. checks of the library -----------------------------------------------------------------------------------
expected_exports="CreateEpFactories RegisterCustomOps ReleaseEpFactory"   # ep_src/exports.map
exports="$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort | xargs)"
if [ "$exports" = "$expected_exports" ]; then
    echo "hip_check: exports ok ($exports)"
else
    echo "hip_check: exports FAILED: expected only $expected_exports, got: $exports" >&2
    status=1
fi
if grep -q 'NEEDED.*\[libamdhip64\.so\.6\]' <<<"$(readelf -d "$lib")"; then
    echo "hip_check: needs libamdhip64.so.6 ($(nm -D --undefined-only "$lib" | grep -c '@hip_') HIP runtime symbols)"
else
    echo "hip_check: FAILED: $lib does not link libamdhip64.so.6" >&2
    status=1
fi
# hipBLASLt is opened at run time: the library must not need it, and must name its sonames for dlopen.
if grep -q 'NEEDED.*hipblaslt' <<<"$(readelf -d "$lib")"; then
    echo "hip_check: FAILED: $lib links hipBLASLt (it must dlopen it)" >&2
    status=1
elif ! grep -q -a 'libhipblaslt\.so\.1' "$lib"; then
    echo "hip_check: FAILED: $lib does not name libhipblaslt.so.1 (hipBLASLt route not compiled in?)" >&2
    status=1
else
    echo "hip_check: hipBLASLt route compiled in, opened at run time (not linked)"
fi
# fp8ort's hand-written hipBLASLt declarations against the real headers (host compile, no GPU)
if clang++-19 -std=c++17 -Wall -Wextra -D__HIP_PLATFORM_AMD__ -isystem "$hipblaslt_root/include" \
    -isystem "$hip_root/include" -I "$root/hip_kernels" "$root/tests/gpu/check_hipblaslt_abi.cc" \
    -o "$out/check_hipblaslt_abi" >"$out/check_hipblaslt_abi.log" 2>&1 && "$out/check_hipblaslt_abi"; then
    echo "hip_check: hipBLASLt ABI ok (hip_kernels/fp8_hipblaslt_api.h against Debian's libhipblaslt-dev)"
else
    cat "$out/check_hipblaslt_abi.log" >&2
    echo "hip_check: FAILED: hip_kernels/fp8_hipblaslt_api.h differs from hipblaslt.h" >&2
    status=1
fi
if grep -q -a 'ROCMExecutionProvider' "$lib"; then
    echo "hip_check: GPU kernels registered for ROCMExecutionProvider (custom-op route)"
else
    echo "hip_check: FAILED: no ROCMExecutionProvider registration in $lib (FP8ORT_GPU_HIP not compiled in?)" >&2
    status=1
fi

# The .hip_fatbin section holds one offload bundle per object with device code; split it and disassemble each
# target's code objects.
isa="$out/isa"
rm -rf "$isa" && mkdir -p "$isa"
llvm-objcopy-19 --dump-section .hip_fatbin="$isa/fatbin" "$lib" "$isa/discard.so"
mapfile -t offsets < <(grep -obUa '__CLANG_OFFLOAD_BUNDLE__' "$isa/fatbin" | cut -d: -f1)
offsets+=("$(stat -c %s "$isa/fatbin")")
bundles=$((${#offsets[@]} - 1))
objects=0
while IFS= read -r obj; do
    if grep -q '\.hip_fatbin' <<<"$(readelf -SW "$obj")"; then objects=$((objects + 1)); fi
done < <(find "$build/CMakeFiles" -name '*.hip.o')
if [ "$bundles" -lt 1 ] || [ "$bundles" -ne "$objects" ]; then
    echo "hip_check: FAILED: $bundles device-code bundles in the library, $objects objects with device code" >&2
    status=1
fi
for ((i = 0; i < bundles; i++)); do
    dd if="$isa/fatbin" of="$isa/bundle$i" iflag=skip_bytes,count_bytes status=none \
        skip="${offsets[i]}" count=$((offsets[i + 1] - offsets[i]))
    listed="$(clang-offload-bundler --list --type=o --input="$isa/bundle$i")"
    for arch in "${lib_targets[@]}"; do
        target="hipv4-amdgcn-amd-amdhsa--$arch"
        if ! grep -qx "$target" <<<"$listed"; then
            echo "hip_check: FAILED: device-code bundle $i of the library has no $arch" >&2
            status=1
            continue
        fi
        clang-offload-bundler --unbundle --type=o --targets="$target" --input="$isa/bundle$i" \
            --output="$isa/bundle$i.$arch.co"
        llvm-objdump-19 -d --mcpu="$arch" "$isa/bundle$i.$arch.co" >>"$isa/$arch.s"
    done
done
check_isa() {  # arch disassembly
    local pattern hits
    pattern="$(pattern_of "$1")"
    hits="$(grep -c -E "$pattern" "$2" 2>/dev/null || true)"
    if [ "${hits:-0}" -gt 0 ]; then
        echo "hip_check: $1 ok ($hits x /$pattern/)"
    else
        echo "hip_check: $1 FAILED: no /$pattern/ in the ISA ($2)" >&2
        status=1
    fi
}
for arch in "${lib_targets[@]}"; do check_isa "$arch" "$isa/$arch.s"; done

# ---- 3. gfx950 ----------------------------------------------------------------------------------------------------
if wait "$new_pid"; then
    cat "$out/$new_target.log"
    for co in "$out/$new_target"/*.co; do llvm-objdump-22 -d --mcpu="$new_target" "$co"; done >"$isa/$new_target.s"
    check_isa "$new_target" "$isa/$new_target.s"
    echo "hip_check: $new_target: device code only (clang-22), not in the linked library"
else
    cat "$out/$new_target.log" >&2
    echo "hip_check: $new_target FAILED to compile with clang-22 (log: $out/$new_target.log)" >&2
    status=1
fi

echo "hip_check: $([ "$status" -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit "$status"
