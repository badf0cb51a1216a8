#!/usr/bin/env bash
# Installs every Debian package that hetrt's build, tests and benchmarks need.
# Idempotent: packages already installed are skipped, so CI pays for apt only once.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  nlohmann-json3-dev libdlpack-dev libcli11-dev libarchive-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  opencl-headers ocl-icd-opencl-dev pocl-opencl-icd
  libvulkan-dev mesa-vulkan-drivers glslang-tools spirv-tools
  vulkan-validationlayers  # the Vulkan tests run under VK_LAYER_KHRONOS_validation
  gcc-arm-none-eabi libnewlib-arm-none-eabi  # micro: Cortex-M firmware
  qemu-system-arm  # micro: emulated Cortex-M boards (mps2-an386, lm3s6965evb) for the firmware tests
  pybind11-dev python3-dev python3-numpy python3-pytest  # the Python package (python/) and its tests
  # hetrt serve: gRPC (Debian's gRPC CMake config needs protobuf-compiler-grpc) and
  # REST (cpp-httplib); curl, python3-grpcio and h2load are independent test clients.
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libcpp-httplib-dev
  curl python3-grpcio python3-protobuf nghttp2-client  # Node.js and npm come with the machine
  iproute2  # ss: the serving tests read the listeners' accept backlogs
  python3-yaml  # tests/deploy: reads the KServe manifests
  podman runc debootstrap  # scripts/test_container.sh: builds and runs the image, its base made locally
  clang  # scripts/fuzz.sh: libFuzzer harnesses (CI runs each for 15 s)
  lld  # links the three test trees in a fifth of GNU ld's time (CMakeLists.txt: HETRT_USE_LLD)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# libFuzzer's runtime is only recommended by clang's package: the one for the
# installed clang, by its major version (libclang-rt-14-dev on Debian 12).
clang_major=$(clang --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
if [ -n "$clang_major" ] && ! dpkg-query -W -f='${Status}' "libclang-rt-$clang_major-dev" 2>/dev/null | grep -q "install ok installed"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing libclang-rt-$clang_major-dev"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "libclang-rt-$clang_major-dev"
fi

# --- npm: the Node.js clients of the tests --------------------------------------
# tests/serve/node_client (a gRPC client of the serving tests) and
# tests/deploy/manifest_schema (the KServe manifests' Kubernetes schema check):
# node_modules (git-ignored) exactly as package-lock.json pins it, skipped when
# the lock is the one last installed (a copy in node_modules). Without npm the
# tests that use them fail, naming what is missing.
root="$(cd "$(dirname "$0")/.." && pwd)"
for node_package in "$root/tests/serve/node_client" "$root/tests/deploy/manifest_schema"; do
  if ! command -v npm >/dev/null; then
    echo "setup: npm not found: ${node_package#"$root"/} stays uninstalled" >&2
  elif ! cmp -s "$node_package/package-lock.json" "$node_package/node_modules/.hetrt-installed-lock.json"; then
    echo "setup: npm ci in ${node_package#"$root"/}"
    npm ci --prefix "$node_package" --ignore-scripts --no-audit --no-fund
    cp "$node_package/package-lock.json" "$node_package/node_modules/.hetrt-installed-lock.json"
  fi
done
