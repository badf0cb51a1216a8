#!/bin/sh
# What a find_package(hetrt) user gets to include (ctest: install.public_headers):
# installs this build to a temporary prefix, then checks that
#   - no header of core/internal/ was installed (the plan, steps, owned
#     handles, ABI builders, TVM-ABI routes stay in the build tree), and
#   - every installed header compiles alone against the prefix and the system
#     headers: none reaches an internal header or leans on an include it does
#     not make itself. The plugin ABI header compiles as C too.
#   - every installed header includes the standard header of each standard
#     facility it names (std_includes_check.py): a header compiled alone cannot
#     show that, as one standard header brings in others.
# The standard headers they include are compiled once, into a precompiled
# header each check starts from: the checks then cost what hetrt's own
# headers cost (they took 100 CPU-s, most of it libstdc++ parsed 65 times).
#   public_headers_check.sh BUILD_DIR SOURCE_DIR CXX CC DLPACK_INCLUDE_DIR
set -eu
build=$1 source=$2 cxx=$3 cc=$4 dlpack=$5
work=$(mktemp -d "${TMPDIR:-/tmp}/hetrt-public-headers.XXXXXX")
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"

leaked=$(cd "$source/core/internal" && find hetrt -name '*.h' | while read -r h; do
  [ ! -e "$prefix/include/$h" ] || echo "$h"; done)
if [ -n "$leaked" ]; then echo "internal headers were installed: $leaked" >&2; exit 1; fi

headers=$(cd "$prefix/include" && find hetrt -name '*.h' | sort)
mkdir "$work/units"
[ -n "$headers" ] || { echo "nothing installed under $prefix/include/hetrt" >&2; exit 1; }
failed=0
std_includes=ok
/usr/bin/python3 "$source/tests/install/std_includes_check.py" "$prefix/include" || std_includes=failed

# The C++ standard headers the installed ones include, precompiled (where the
# compiler cannot use it, each check parses them again: slower, same result).
mkdir "$work/std"
(cd "$prefix/include" && find hetrt -name '*.h' -exec grep -h '^#include <[a-z_]*>$' {} + | sort -u) \
  > "$work/std/std_headers.h"
"$cxx" -std=c++20 -x c++-header "$work/std/std_headers.h" -o "$work/std/std_headers.h.gch" 2> "$work/std/pch.err" ||
  echo "(the standard headers could not be precompiled: $(head -n 1 "$work/std/pch.err"))"

# Two compilers at a time: the check is a few dozen small translation units.
count=$(echo "$headers" | wc -l)
echo "$headers" | xargs -P 2 -I HEADER sh -c '
  unit=$2/$(echo "$1" | tr / _).cc
  printf "#include \"%s\"\n" "$1" > "$unit"
  if ! "$3" -std=c++20 -fsyntax-only -include "$5/std_headers.h" -I"$2/../prefix/include" -I"$4" "$unit" \
      2> "$unit.err"; then
    { echo "$1 does not compile alone from the install:"; head -n 5 "$unit.err"; } >&2
    echo "$1" >> "$2/failed"
  fi' _ HEADER "$work/units" "$cxx" "$dlpack" "$work/std"
[ ! -f "$work/units/failed" ] || failed=$((failed + $(wc -l < "$work/units/failed")))
printf '#include "hetrt/plugin_abi.h"\n' > "$work/abi.c"
"$cc" -std=c11 -fsyntax-only -I"$prefix/include" -I"$dlpack" "$work/abi.c" ||
  { echo "hetrt/plugin_abi.h does not compile as C" >&2; failed=$((failed + 1)); }
if [ "$failed" -ne 0 ]; then echo "$failed of $count installed headers failed (work folder: $work)" >&2; exit 1; fi
if [ "$std_includes" != ok ]; then echo "installed headers miss standard includes (above)" >&2; exit 1; fi
echo "$count installed headers, each compiles alone; no internal header installed"
rm -rf "$work"
