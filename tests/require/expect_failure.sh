#!/usr/bin/env bash
# Runs a command that must fail and print PATTERN (an extended regex): proves
# that a required device that is missing fails the run instead of skipping.
# Usage: expect_failure.sh PATTERN COMMAND...
pattern=$1
shift
output=$("$@" 2>&1)
status=$?
if [ "$status" -eq 0 ]; then
  echo "expected a failure, but '$*' passed:"
  echo "$output" | tail -20
  exit 1
fi
if ! grep -Eq "$pattern" <<<"$output"; then
  echo "'$*' failed (exit $status) without saying /$pattern/:"
  echo "$output" | tail -40
  exit 1
fi
grep -E -m3 "$pattern" <<<"$output"
echo "failed as required (exit $status)"
