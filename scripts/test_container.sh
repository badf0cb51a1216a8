#!/usr/bin/env bash
# Builds deploy/Dockerfile with podman and runs each image the way deploy/kserve's
# ServingRuntime runs it: its command, args, env and ports, as uid 1000, with
# a read-only root filesystem and /tmp as a tmpfs, every capability dropped and
# no privilege escalation. Clients outside the container then check readiness,
# metadata, the models' outputs against the fixtures, gRPC health, /metrics,
# and that `podman stop` (SIGTERM) answers the requests in flight and exits 0
# within the grace period (tests/deploy/container_test.py). Then twice more
# with a CUDA model in the repository: with the fake CUDA driver of the tests
# (tests/cuda/fake_*.cc, from this build tree: build/test-fake-cuda/13.0, or
# HETRT_FAKE_CUDA) mounted where the NVIDIA container toolkit mounts the real
# libcuda.so.1 (`hetrt plugins` lists its devices, the CUDA model's outputs
# match), and with no driver (the plugin and the server's log say why, the
# other models are served).
#
# Where no container registry answers, the Debian base image is made here with
# debootstrap from the Debian mirror this machine's apt uses (its sources:
# scripts/debian_mirror.sh), or HETRT_DEBIAN_MIRROR (and
# HETRT_DEBIAN_SECURITY_MIRROR), as a user in an air-gapped network would.
#
# A pass records the content it tested in deploy/container-tested.sha256: with
# --if-changed (as scripts/test.sh runs it) the script runs only when
# deploy/, serve/, scripts/setup.sh or the test itself changed since that pass.
# Usage: scripts/test_container.sh [--if-changed] [TARGET...]   (default: serve serve-cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$root/build-container
stamp=deploy/container-tested.sha256
tested_content() {  # one hash over the files the image and this test are made of
  git ls-files -z deploy serve scripts/setup.sh scripts/test_container.sh scripts/debian_mirror.sh \
    tests/deploy/container_test.py \
    tests/serve/server_process.py | grep -zv "^$stamp\$" | xargs -0 git hash-object | sha256sum | cut -d' ' -f1
}
if [ "${1:-}" = "--if-changed" ]; then
  shift
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(tested_content)" ]; then
    echo "test_container: the image's files are as when it last passed ($stamp): not rebuilt"
    exit 0
  fi
fi
mkdir -p "$work"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(serve serve-cpu)
for tool in podman python3; do
  command -v "$tool" >/dev/null || { echo "test_container: $tool not found: run scripts/setup.sh" >&2; exit 1; }
done
python=/usr/bin/python3  # Debian's, with python3-grpcio and numpy
fake_cuda=${HETRT_FAKE_CUDA:-$root/build/test-fake-cuda/13.0/libcuda.so.1}
[ -f "$fake_cuda" ] || { echo "test_container: no fake CUDA driver at $fake_cuda:" \
  "build it (cmake --build build --target hetrt_fake_cuda) or set HETRT_FAKE_CUDA" >&2; exit 1; }
# Where the NVIDIA container toolkit mounts the driver's libcuda.so.1 (Debian's
# library folder, which the loader searches without its cache).
driver_path=/usr/lib/x86_64-linux-gnu/libcuda.so.1
export HETRT_FIXTURES="${HETRT_FIXTURES:-$root/../shared/fixtures}"
step() { echo "== test_container: $* ($((SECONDS / 60)) m $((SECONDS % 60)) s)"; }

# --- the base image -------------------------------------------------------------
base=localhost/hetrt-base/debian:bookworm
build_args=()
if timeout 120 podman pull -q docker.io/library/debian:bookworm >/dev/null 2>&1 &&
   timeout 120 podman pull -q docker.io/library/debian:bookworm-slim >/dev/null 2>&1; then
  step "base images from docker.io"
  probe_image=docker.io/library/debian:bookworm-slim
else
  if ! podman image exists "$base"; then
    command -v debootstrap >/dev/null || { echo "test_container: no registry and no debootstrap: run scripts/setup.sh" >&2; exit 1; }
    # shellcheck source=scripts/debian_mirror.sh
    . scripts/debian_mirror.sh
    mirror=${HETRT_DEBIAN_MIRROR:-}
    if [ -z "$mirror" ] && ! mirror=$(debian_mirror bookworm); then
      echo "test_container: no Debian mirror for bookworm in this machine's apt sources" \
        "(/etc/apt/sources.list, /etc/apt/sources.list.d/): set HETRT_DEBIAN_MIRROR" >&2
      exit 1
    fi
    security=${HETRT_DEBIAN_SECURITY_MIRROR:-$(debian_security_mirror bookworm || true)}
    step "no registry answers: making $base with debootstrap from $mirror"
    rootfs=$work/rootfs
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
      { tail -20 "$work/debootstrap.log" >&2; exit 1; }
    # As Debian's images: the updates and security suites (security where
    # this machine has a mirror for it); as -slim: no documentation, manual
    # pages or translations (dpkg leaves them out later too).
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" >"$rootfs/etc/apt/sources.list"
    if [ -n "$security" ]; then
      printf 'deb %s bookworm-security main\n' "$security" >>"$rootfs/etc/apt/sources.list"
    else
      step "no bookworm-security mirror in this machine's apt sources: the image has none (HETRT_DEBIAN_SECURITY_MIRROR)"
    fi
    cat >"$rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
    find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    rm -rf "$rootfs"/usr/share/{man,info,lintian}/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*
    find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
    tar --numeric-owner -C "$rootfs" -c . | podman import --quiet --change 'CMD ["bash"]' - "$base" >/dev/null
    rm -rf "$rootfs"
  fi
  step "base image $base ($(podman image inspect --format '{{.Size}}' "$base" | awk '{printf "%.0f MB", $1 / 1e6}'))"
  build_args=(--build-arg "DEBIAN_IMAGE=$base" --build-arg "DEBIAN_SLIM_IMAGE=$base")
  probe_image=$base
fi

# --- how containers run on this machine -------------------------------------------
# podman's defaults first. Where root lacks CAP_SYS_RESOURCE, the OCI runtime
# cannot set podman's default rlimits: then explicit ones this machine grants
# (the open-file limit of this shell, a process limit halved until accepted).
# A runtime that rejects the cgroup layout (crun on some cgroup v1 hosts) is
# replaced by runc.
run_opts=()
runtimes=("")
command -v runc >/dev/null && runtimes+=("--runtime=runc")
found=""
tried=""
for runtime in "${runtimes[@]}"; do
  for nproc in default "$(ulimit -Hu)" 65536 16384 4096; do
    opts=()
    [ -n "$runtime" ] && opts+=("$runtime")
    [ "$nproc" = default ] || opts+=(--ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)" --ulimit "nproc=$nproc:$nproc")
    if out=$(podman run --rm "${opts[@]}" "$probe_image" true 2>&1); then
      run_opts=("${opts[@]}")
      found=yes
      break 2
    fi
    tried+="  podman run ${opts[*]}: ${out##*$'\n'}"$'\n'
  done
done
[ -n "$found" ] || { printf 'test_container: no way to run a container here:\n%s' "$tried" >&2; exit 1; }
step "containers run with: podman run ${run_opts[*]:-(defaults)}"

# --- the ServingRuntime's container, as its pod runs it --------------------------
runtime_yaml=deploy/kserve/serving-runtime.yaml
read -r -a serve_command < <($python - "$runtime_yaml" <<'EOF'
import sys, yaml
spec = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["metadata"]["name"] == "hetrt")["spec"]
c = spec["containers"][0]
print(" ".join(c["command"] + c["args"]))
EOF
)
mapfile -t serve_env < <($python - "$runtime_yaml" <<'EOF'
import sys, yaml
spec = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["metadata"]["name"] == "hetrt")["spec"]
for e in spec["containers"][0].get("env", []):
    print("--env=%s=%s" % (e["name"], e["value"]))
EOF
)
grace=30  # Kubernetes' default terminationGracePeriodSeconds
# serve NAME REPOSITORY [PODMAN_OPTION...]: starts $image's server as the pod runs it.
serve() {
  local name=$1 repo=$2
  shift 2
  podman rm -f "$name" >/dev/null 2>&1 || true
  podman run -d --name "$name" "${run_opts[@]}" \
    --user 1000:1000 --read-only --tmpfs /tmp:rw,nosuid,nodev,size=1g \
    --cap-drop=ALL --security-opt=no-new-privileges --cpus=2 \
    -v "$repo:/mnt/models:ro" "$@" "${serve_env[@]}" \
    -p 127.0.0.1::8080 -p 127.0.0.1::8081 -p 127.0.0.1::8002 \
    --stop-timeout "$grace" \
    --entrypoint "${serve_command[0]}" "$image" "${serve_command[@]:1}" >/dev/null
}
port() { podman port "$1" "$2/tcp" | head -1; }
# plugins_check cuda|none [PODMAN_OPTION...]: `hetrt plugins` in $image, as restricted.
plugins_check() {
  local want=$1
  shift
  $python tests/deploy/container_test.py plugins "$want" -- podman run --rm "${run_opts[@]}" \
    --user 1000:1000 --read-only --tmpfs /tmp --cap-drop=ALL --security-opt=no-new-privileges \
    "$@" --entrypoint hetrt "$image" plugins
}

status=0
for target in "${targets[@]}"; do
  image=localhost/hetrt-serve:test-$target
  step "podman build --target $target"
  podman build "${run_opts[@]}" "${build_args[@]}" --target "$target" -f deploy/Dockerfile -t "$image" . \
    >"$work/build-$target.log" 2>&1 || { tail -40 "$work/build-$target.log" >&2; exit 1; }
  size=$(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1 / 1e6}')
  step "$image: $size"
  # The CPU pool follows the container's CPU limit (its cgroup's quota).
  if [ "$(nproc)" -ge 2 ]; then
    threads=$(podman run --rm "${run_opts[@]}" --cpus=1 --user 1000:1000 --read-only --tmpfs /tmp \
      --entrypoint hetrt "$image" plugins 2>&1 | sed -n 's/.*parallel launch: \([0-9]*\) thread.*/\1/p' | head -1)
    if [ "$threads" != 1 ]; then
      echo "test_container: under --cpus=1 the CPU plugin starts ${threads:-no} threads, want 1" >&2
      exit 1
    fi
    step "under --cpus=1 the CPU plugin starts 1 thread"
  fi

  repo=$work/models-$target
  $python tests/deploy/container_test.py repository "$repo" "$target"
  name=hetrt-test-$target
  serve "$name" "$repo"
  http=$(port "$name" 8080) grpc=$(port "$name" 8081) metrics=$(port "$name" 8002)
  if $python tests/deploy/container_test.py check "$target" "$http" "$grpc" "$metrics" &&
     $python tests/deploy/container_test.py drain "$http" "$metrics" -- podman stop -t "$grace" "$name"; then
    code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
    if [ "$code" = 0 ]; then
      step "$target: PASSED ($size)"
    else
      echo "test_container: $target exited $code after SIGTERM" >&2
      status=1
    fi
  else
    status=1
  fi
  [ "$status" -eq 0 ] || podman logs "$name" 2>&1 | tail -40 >&2
  podman rm -f "$name" >/dev/null 2>&1 || true
  [ "$status" -eq 0 ] || break

  # CUDA: the fake driver where the NVIDIA container toolkit mounts the real
  # one (read-only, one device as a pod's one GPU), then no driver at all.
  cuda_repo=$work/models-$target-cuda
  $python tests/deploy/container_test.py repository "$cuda_repo" "$target" cuda
  driver=(-v "$fake_cuda:$driver_path:ro" --env HETRT_FAKE_CUDA_DEVICES=1)
  name=hetrt-test-$target-cuda
  if plugins_check cuda "${driver[@]}" && serve "$name" "$cuda_repo" "${driver[@]}" &&
     $python tests/deploy/container_test.py check "$target" \
       "$(port "$name" 8080)" "$(port "$name" 8081)" "$(port "$name" 8002)" cuda; then
    step "$target: the CUDA model on the fake driver: PASSED"
  else
    status=1
    podman logs "$name" 2>&1 | tail -40 >&2
  fi
  podman rm -f "$name" >/dev/null 2>&1 || true
  [ "$status" -eq 0 ] || break
  name=hetrt-test-$target-no-driver
  if plugins_check none && serve "$name" "$cuda_repo" &&
     $python tests/deploy/container_test.py no-driver "$target" "$(port "$name" 8080)" -- podman logs "$name"; then
    step "$target: no CUDA driver: the other models served, the CUDA model unavailable saying why: PASSED"
  else
    status=1
    podman logs "$name" 2>&1 | tail -40 >&2
  fi
  podman rm -f "$name" >/dev/null 2>&1 || true
  [ "$status" -eq 0 ] || break
done
if [ "$status" -eq 0 ] && [ $# -eq 0 ]; then
  tested_content >"$stamp"
  step "every target passed: $stamp records what was tested"
fi
exit "$status"
