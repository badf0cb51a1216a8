#!/bin/sh
# The plugin SDK as a plugin author meets it (ctest: sdk.template_out_of_tree):
# installs this build to a temporary prefix, builds examples/plugin-template
# against that prefix alone, runs the exporter-built model on the template's
# simulated device in-process and through the installed `hetrt` CLI, and runs
# the installed conformance kit against the template.
#   template_check.sh BUILD_DIR SOURCE_DIR
# Works in a fresh folder under $TMPDIR (outside the source tree, so that the
# include-path check below means something), removed when all passed.
set -eu
build=$1 source=$2
template=$source/examples/plugin-template
work=$(mktemp -d "${TMPDIR:-/tmp}/hetrt-template-check.XXXXXX")
mkdir -p "$work/model"
echo "work folder: $work"
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
# Only the prefix: no CMAKE_PREFIX_PATH or hetrt_DIR from the caller's environment.
# No optimization: what this checks is the install, not the template's speed
# (its build took 26 s at -O3, 19 s without).
env -u CMAKE_PREFIX_PATH -u hetrt_DIR cmake -S "$template" -B "$work/build" -DCMAKE_BUILD_TYPE= \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log"
found=$(sed -n 's/^hetrt_DIR:PATH=//p' "$work/build/CMakeCache.txt")
case $found in
  "$prefix"/*) ;;
  *) echo "find_package(hetrt) found $found, not the install in $prefix" >&2; exit 1 ;;
esac
cmake --build "$work/build" > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
# Nothing of the source tree but the template itself on any include path.
leaks=$(grep -rhoE --include=*.ninja --include=flags.make -e "-(I|isystem ?)$source[^ ]*" "$work/build" \
        | grep -v "^-[a-z]* *$template" || true)
if [ -n "$leaks" ]; then echo "the template build reaches into the source tree: $leaks" >&2; exit 1; fi

export HETRT_PLUGIN_PATH="$work/build"
"$work/build/sim_model" build "$work/model"
"$prefix/bin/hetrt" run "$work/model/deploy.so" --device cpu --device ext_dev \
  --inputs "$work/model/inputs.params" --save-outputs "$work/model/cli.params"
"$work/build/sim_model" compare "$work/model/cli.params" "$work/model/expected.params"
"$prefix/bin/hetrt-conformance" "$work/build/libhetrt_plugin_sim.so" \
  --profile "$prefix/share/hetrt/conformance-profiles/template_sim.profile"

# The installed micro plugin builds a Model Library Format model from the C
# runtime it finds in the prefix (share/hetrt/micro), not from the source tree.
mlf="${3:-}/tvm-0.18/mlf/add3_aot_mlf.tar"
if [ -f "$mlf" ]; then
  (cd "$work" && HETRT_PLUGIN_PATH= "$prefix/bin/hetrt" run "$mlf" --inputs "${3}/tvm-0.18/mlf/add3_inputs.params") \
    > "$work/mlf.log" 2>&1 || { cat "$work/mlf.log" >&2; exit 1; }
  grep -q 'shape \[1, 10\] float32' "$work/mlf.log" || { echo "installed micro run: unexpected output" >&2; cat "$work/mlf.log" >&2; exit 1; }
else
  echo "no MLF fixture at $mlf: installed micro run not checked"
fi
rm -rf "$work"
