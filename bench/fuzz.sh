#!/usr/bin/env bash
# Longer fuzzing than CI's few seconds: every target (or those named) for SECONDS each
# (default 600), keeping the corpus in fuzz/corpus/ between runs.
#
#   bench/fuzz.sh [SECONDS] [TARGET ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec "$root/fuzz/run.sh" "${1:-600}" "${@:2}"
