#!/usr/bin/env bash
# Compile every hip_kernels/*.hip for AMD targets without ROCm and check the ISA for the matrix instructions.
#
# gfx942 (MI300) must contain an FP8 MFMA (v_mfma_*fp8*), gfx1201 (RDNA4) an FP8 WMMA (v_wmma_*fp8*),
# gfx1100 (RDNA3, no FP8 hardware) the f16 WMMA (v_wmma_f32_16x16x16_f16). Toolchain: Debian clang-19/lld-19,
# HIP headers from Debian sid's libamdhip64-dev, device bitcode from trixie's rocm-device-libs-17 (FACTS.md).
# Usage: tools/hip_check.sh            (installs what is missing, needs root + network the first time)
# Env:   FP8ORT_HIP_CACHE  where headers/bitcode are unpacked (default ~/.cache/fp8ort-hip)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${FP8ORT_HIP_CACHE:-$HOME/.cache/fp8ort-hip}"
targets=(gfx1100 gfx942 gfx1201)
mkdir -p "$cache"

need_apt=()
for tool in clang++-19 llvm-objdump-19 llvm-dis-19 llvm-as-19 clang-offload-bundler-19; do
    command -v "$tool" >/dev/null 2>&1 || need_apt=(clang-19 lld-19 llvm-19)
done
if [ "${#need_apt[@]}" -gt 0 ]; then
    echo "hip_check: installing ${need_apt[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# clang-offload-bundler-19 is not always on PATH; the llvm-19 bin folder holds it.
export PATH="$PATH:/usr/lib/llvm-19/bin"
command -v clang-offload-bundler >/dev/null || { echo "hip_check: clang-offload-bundler missing" >&2; exit 2; }

# Fetch a .deb from another Debian suite through a private apt configuration (no change to the system's lists).
fetch_deb() {  # suite package destdir
    local suite="$1" pkg="$2" dest="$3" apt_dir="$cache/apt-$1"
    mkdir -p "$apt_dir/lists/partial" "$dest"
    echo "deb http://deb.debian.org/debian $suite main" >"$apt_dir/sources.list"
    local opts=(-oDir::Etc::SourceList="$apt_dir/sources.list" -oDir::Etc::SourceParts=/dev/null
                -oDir::State::Lists="$apt_dir/lists" -oAPT::Get::List-Cleanup=0 -oAPT::Sandbox::User=root)
    [ -n "$(ls "$apt_dir/lists" 2>/dev/null | grep -v partial)" ] || apt-get "${opts[@]}" update -qq
    (cd "$apt_dir" && rm -f "${pkg}"_*.deb && apt-get "${opts[@]}" download "$pkg" >/dev/null)
    dpkg -x "$apt_dir/${pkg}"_*.deb "$dest"
}

hip_root="$cache/hip"
if [ ! -f "$hip_root/usr/include/hip/hip_runtime.h" ]; then
    echo "hip_check: fetching libamdhip64-dev (sid)"
    fetch_deb sid libamdhip64-dev "$hip_root"
fi
bc_root="$cache/bitcode"
if [ -z "$(find "$bc_root" -name 'ocml.bc' 2>/dev/null | head -1)" ]; then
    echo "hip_check: fetching rocm-device-libs-17 (trixie)"
    fetch_deb trixie rocm-device-libs-17 "$bc_root"
fi
bc_dir="$(dirname "$(find "$bc_root" -name 'ocml.bc' | head -1)")"
# gfx12 needs oclc_isa_version_120x.bc, absent from the LLVM-17 bitcode: derive it from the gfx1100 file.
for v in 1200 1201; do
    if [ ! -f "$bc_dir/oclc_isa_version_$v.bc" ]; then
        llvm-dis-19 "$bc_dir/oclc_isa_version_1100.bc" -o - | sed "s/i32 11000/i32 ${v}0/" |
            llvm-as-19 -o "$bc_dir/oclc_isa_version_$v.bc"
    fi
done
hip_inc="$(dirname "$(find "$hip_root" -path '*/hip/hip_runtime.h' | head -1)")/.."

out="$root/build/hip_check"
mkdir -p "$out"
status=0
shopt -s nullglob
sources=("$root"/hip_kernels/*.hip)
[ "${#sources[@]}" -gt 0 ] || { echo "hip_check: no .hip sources" >&2; exit 1; }
for arch in "${targets[@]}"; do
    for src in "${sources[@]}"; do
        name="$(basename "$src" .hip)"
        obj="$out/$name.$arch.o"
        clang++-19 -x hip -std=c++17 --offload-arch="$arch" -nogpuinc --rocm-device-lib-path="$bc_dir" \
            -include __clang_hip_runtime_wrapper.h -isystem "$hip_inc" -I "$root/hip_kernels" \
            -D__HIP_PLATFORM_AMD__ --cuda-device-only -O3 -Wall -Wno-pass-failed -Werror=return-type -c "$src" -o "$obj"
        clang-offload-bundler --unbundle --type=o --targets="hipv4-amdgcn-amd-amdhsa--$arch" \
            --input="$obj" --output="$obj.dev"
        llvm-objdump-19 -d --mcpu="$arch" "$obj.dev" >"$out/$name.$arch.s"
    done
    all="$(cat "$out"/*."$arch".s)"
    case "$arch" in
        gfx942) pattern='v_mfma_[a-z0-9_]*fp8' ;;
        gfx1201) pattern='v_wmma_[a-z0-9_]*fp8' ;;
        gfx1100) pattern='v_wmma_f32_16x16x16_f16' ;;
    esac
    hits="$(grep -c -E "$pattern" <<<"$all" || true)"
    if [ "$hits" -gt 0 ]; then
        echo "hip_check: $arch ok ($hits x /$pattern/)"
    else
        echo "hip_check: $arch FAILED: no /$pattern/ in the ISA of ${sources[*]##*/}" >&2
        status=1
    fi
done
exit "$status"
