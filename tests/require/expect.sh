#!/usr/bin/env bash
# Runs COMMAND and checks how a missing device was handled: "fail" (it must
# fail and print PATTERN: a required device that is missing fails the run) or
# "skip" (it must pass and print PATTERN: a missing device nothing requires
# skips with its reason). PATTERN is an extended regex.
# Usage: expect.sh fail|skip PATTERN COMMAND...
mode=$1 pattern=$2
shift 2
output=$("$@" 2>&1)
status=$?
if { [ "$mode" = fail ] && [ "$status" -eq 0 ]; } || { [ "$mode" = skip ] && [ "$status" -ne 0 ]; }; then
  echo "expected to $mode, but '$*' exited $status:"
  echo "$output" | tail -40
  exit 1
fi
if ! grep -Eq "$pattern" <<<"$output"; then
  echo "'$*' exited $status without saying /$pattern/:"
  echo "$output" | tail -40
  exit 1
fi
grep -E -m3 "$pattern" <<<"$output"
echo "did $mode as it should (exit $status)"
