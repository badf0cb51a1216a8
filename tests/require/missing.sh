#!/usr/bin/env bash
# Stands in for a suite that could not be built here: skips (77) with the
# reason, or fails naming what is missing when HETRT_REQUIRE asks for it
# (tests/test_support.h has the same rule for GoogleTest tests).
# Usage: missing.sh WHAT REASON...
what=$1
shift
list=",${HETRT_REQUIRE:-},"
case "$list" in
  *",-$what,"*) ;;
  *",all,"* | *",$what,"*)
    echo "$what is required (HETRT_REQUIRE=${HETRT_REQUIRE:-}) but missing: $*"
    exit 1
    ;;
esac
# The skipped-tests table (scripts/skipped_tests.py) reads the line after "Skipped".
printf '%s: Skipped\n%s\n' "$what" "$*"
exit 77
