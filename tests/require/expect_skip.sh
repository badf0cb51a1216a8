#!/usr/bin/env bash
# Runs a command that must pass by skipping and print PATTERN (an extended
# regex): proves that a missing device that nothing requires skips with its
# reason instead of failing. Usage: expect_skip.sh PATTERN COMMAND...
pattern=$1
shift
output=$("$@" 2>&1)
status=$?
if [ "$status" -ne 0 ]; then
  echo "expected a pass by skipping, but '$*' failed (exit $status):"
  echo "$output" | tail -40
  exit 1
fi
if ! grep -Eq "$pattern" <<<"$output"; then
  echo "'$*' passed without saying /$pattern/:"
  echo "$output" | tail -40
  exit 1
fi
grep -E -m3 "$pattern" <<<"$output"
echo "skipped as it should when nothing requires the device"
