#!/usr/bin/env bash
# Records a .nettrace of one Workloads scenario with NO tool: the runtime's own EventPipe
# environment variables start a file session at startup and stream it to OUT.
#
#   testapps/record-with-env.sh WORKLOAD_DLL SCENARIO OUT.nettrace [scenario args...]
#
# Environment (all optional):
#   RUNTIME_KEYWORDS  keyword mask for Microsoft-Windows-DotNETRuntime (hex, default 0x4c14fccbd:
#                     GC, Loader, Jit, NGen, Exception, Contention, Threading, Type, Stack, ...)
#   RUNTIME_LEVEL     level for it (default 5 = verbose, which includes GC/AllocationTick)
#   EXTRA_PROVIDERS   more providers to append, in the same Provider:Keywords:Level form
#   CIRCULAR_MB       EventPipe buffer size in MB, decimal (default 256)
#   NETTRACE_V6=1     ask for NetTrace V6: refused, see below
#
# Prints the scenario's own output, then one line "trace=<path> bytes=<n> format=<...>".
# Exit status: the scenario's, or 1 when no trace was written.
set -euo pipefail

if [ $# -lt 3 ]; then
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
dll=$1
scenario=$2
out=$3
shift 3

if [ "${NETTRACE_V6:-0}" = "1" ]; then
    # .NET 10.0.x has no configuration knob for the file format: the startup (environment) session
    # is always created with EP_SERIALIZATION_FORMAT_NETTRACE_V4 and the runtime contains no V6
    # writer (its only config names are EnableEventPipe, EventPipeCircularMB, EventPipeConfig,
    # EventPipeEnableStackwalk, EventPipeOutputPath, EventPipeOutputStreaming, EventPipeProcNumbers,
    # EventPipeRundown, EventPipeThreadSamplingRate). Refuse rather than silently write V5.
    echo "record-with-env.sh: NETTRACE_V6=1: this runtime cannot write NetTrace V6 (no such setting in .NET 10)" >&2
    exit 2
fi

case "$out" in
    /*) ;;
    *) out="$PWD/$out" ;;
esac
rm -f "$out"

runtime_keywords=${RUNTIME_KEYWORDS:-0x4c14fccbd}
runtime_level=${RUNTIME_LEVEL:-5}
providers="Microsoft-DotNETCore-SampleProfiler:0x0:5"
providers+=",Microsoft-Windows-DotNETRuntime:${runtime_keywords}:${runtime_level}"
providers+=",Clrspy-Workloads:0xffffffff:5"
providers+=",System.Net.Http:0xffffffff:5"
if [ -n "${EXTRA_PROVIDERS:-}" ]; then
    providers+=",${EXTRA_PROVIDERS}"
fi
# The runtime reads numeric DOTNET_ settings as hexadecimal.
circular_hex=$(printf '%x' "${CIRCULAR_MB:-256}")

set +e
DOTNET_EnableEventPipe=1 \
DOTNET_EventPipeOutputPath="$out" \
DOTNET_EventPipeOutputStreaming=1 \
DOTNET_EventPipeRundown=1 \
DOTNET_EventPipeCircularMB="$circular_hex" \
DOTNET_EventPipeConfig="$providers" \
    dotnet "$dll" "$scenario" "$@"
status=$?
set -e

if [ ! -s "$out" ]; then
    echo "record-with-env.sh: no trace written to $out" >&2
    exit 1
fi
magic=$(head -c 8 "$out")
if [ "$magic" != "Nettrace" ]; then
    echo "record-with-env.sh: $out does not start with the Nettrace magic" >&2
    exit 1
fi
# V4/V5: "Nettrace" + int32 20 + "!FastSerialization.1"; V6: "Nettrace" + uint32 0 + uint32 major + uint32 minor.
if [ "$(head -c 32 "$out" | tail -c 20)" = '!FastSerialization.1' ]; then
    format="FastSerialization(V4/V5)"
else
    major=$(od -An -tu4 -j12 -N4 "$out" | tr -d ' ')
    minor=$(od -An -tu4 -j16 -N4 "$out" | tr -d ' ')
    format="V${major}.${minor}"
fi
echo "trace=$out bytes=$(stat -c %s "$out") format=$format"
exit $status
