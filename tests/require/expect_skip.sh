#!/usr/bin/env bash
# A missing device nothing requires skips with its reason: see expect.sh.
exec "$(dirname "$0")/expect.sh" skip "$@"
