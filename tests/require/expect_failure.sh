#!/usr/bin/env bash
# A required device that is missing fails the run: see expect.sh.
exec "$(dirname "$0")/expect.sh" fail "$@"
