#!/usr/bin/env bash
# Builds clrspy's hold hook (hooks/ClrspyHold) for `clrspy record --dump-on-exception ... --hold
# --hold-hook DLL`. Needs the .NET SDK 8+; clrspy itself builds without it.
#
#   hooks/build.sh [OUT_DIR]     (default: target/hooks) -> OUT_DIR/ClrspyHold.dll
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/hooks}
dotnet build "$root/hooks/ClrspyHold" -c Release --nologo -v q -o "$out" >&2
echo "$out/ClrspyHold.dll"
