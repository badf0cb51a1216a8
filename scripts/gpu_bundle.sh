#!/usr/bin/env bash
# Packs what the CUDA checks need into .gpu/ (git-ignored): the test and bench
# binaries, the core and plugins, the test kernels, the CUDA fixtures and the
# shared libraries they link that a bare CUDA machine may lack. The device
# tool carries .gpu/ to a GPU machine, where scripts/gpu_check.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=${HETRT_FIXTURES:-$PWD/../shared/fixtures}
rm -rf .gpu && mkdir -p .gpu/build/bin .gpu/build/tests .gpu/build/test-kernels .gpu/sysroot .gpu/fixtures/tvm-0.18 .gpu/include
bins=(cuda_test hetrt-conformance cuda_bench hetrt)
for b in "${bins[@]}"; do cp "build/bin/$b" .gpu/build/bin/; done
cp -r build/lib .gpu/build/
cp build/tests/cuda_test_kernels* .gpu/build/tests/
cp build/test-kernels/libffi_stream_kernels.so .gpu/build/test-kernels/
# Tests compile v0.22-form model libraries there (tests/kernels/ffi_model_host.c
# with the core's headers and DLPack's, which a bare machine may lack).
cp -r "$(dirname "$(find /usr/include -path '*dlpack/dlpack.h' | head -1)")" .gpu/include/
for m in "$fixtures"/tvm-0.18/*cuda*; do cp -r "$m" .gpu/fixtures/tvm-0.18/; done
# The two-branch model on CPU+CUDA as a graph and as a Relax executable, for
# `hetrt bench` to compare the executors there (exporting needs no GPU).
mkdir -p .gpu/models/two_branch_cuda && build/bin/make_bench_model two_branch_cuda .gpu/models/two_branch_cuda
# Every library outside glibc, the C++ runtime (the image's is newer) and the
# build tree, so nothing else depends on the image.
for f in .gpu/build/bin/* .gpu/build/lib/*.so .gpu/build/lib/hetrt-plugins/*.so .gpu/build/test-kernels/*.so; do
  ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | grep -v -E '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' | grep -v "$PWD/build" |
  while read -r lib; do cp -L "$lib" .gpu/sysroot/; done
strip --strip-unneeded .gpu/build/bin/* .gpu/build/lib/*.so .gpu/build/lib/hetrt-plugins/*.so .gpu/sysroot/* 2>/dev/null || true
# The device tool carries 64 MiB at most: ICU's data alone is 30 MiB unpacked.
tar -C .gpu -cJf .gpu/sysroot.tar.xz sysroot && rm -rf .gpu/sysroot
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
du -sh .gpu
