#!/usr/bin/env bash
# Cross-checks clrspy's heap snapshots against the reference implementations on live processes,
# and measures them at scale. Everything fetched (dotnet/diagnostics sources, the key) is
# extracted into bench/out/ at bench time and never committed.
#
#   bench/heap_reference.sh [--no-scale] [--scale-count N]
#
# 1. Reference collector: dotnet-gcdump's own EventPipeDotNetHeapDumper (bench/GcdumpCollector,
#    assembly `dotnet-gcdump` public-signed with the key Microsoft.Diagnostics.NETCore.Client opens
#    its internals to) snapshots testapps/Workloads `heap` (12,345 Workloads.HeapOrder).
#    `clrspy heap` must read that file with exactly 12,345 orders; clrspy's own snapshot of the
#    same process must agree with it exactly on every Workloads.* type (totals: ratio shown — a
#    second GC may free or promote what the first left). `clrspy heap diff` of two reference
#    files (after `grow 20000`) must show exactly +20,000 orders. The reference reader
#    (bench/gcdump_reference.sh) must read clrspy's file to clrspy's own totals.
# 2. ClrMD (bench/ClrmdHarness, NuGet Microsoft.Diagnostics.Runtime) walks a full core dump
#    (`clrspy dump --type full --compress none`) of the same process at the same moment: exact on
#    every Workloads.* type; total reachable objects shown with ratio.
# 3. Scale: Workloads `heap10m` (10,000,000 Workloads.HeapTreeNode in a binary tree): wall time
#    and peak RSS (/usr/bin/time -v) of `clrspy gcdump -p`, `clrspy heap`, `clrspy heap diff`
#    (after `grow 100000`) and the reference collector on the same process.
#
# DIAG_SRC: a dotnet/diagnostics git directory or checkout (default: /work/.mirror copy if there,
# else a blobless clone into bench/out/). REF_COMMIT: the sources' commit (default: the last one
# before dotnet-gcdump's non-lossy mode, which needs a Microsoft.Diagnostics.NETCore.Client newer
# than NuGet serves here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/bench/out/heapref"
scale=1
scale_count=10000000
while [ $# -gt 0 ]; do
    case $1 in
        --no-scale) scale=0 ;;
        --scale-count) scale_count=$2; shift ;;
        *) echo "usage: $0 [--no-scale] [--scale-count N]" >&2; exit 2 ;;
    esac
    shift
done
clrspy=${CLRSPY:-"$root/target/release/clrspy"}
[ -x "$clrspy" ] || { echo "build it first: cargo build --release -p clrspy" >&2; exit 2; }
ref_commit=${REF_COMMIT:-b3aba46f64b540e10b565a8c95c49b3dd8ec1030}
mkdir -p "$out"
rm -f "$out"/*.gcdump "$out"/*.core "$out"/*.json "$out"/*.time "$out"/*.log

# --- fetched sources and key, built harnesses ------------------------------------------------
src=${DIAG_SRC:-}
if [ -z "$src" ]; then
    if [ -d /work/.mirror/dotnet+diagnostics/repo ]; then
        src=/work/.mirror/dotnet+diagnostics/repo
    else
        src="$root/bench/out/diagnostics.git"
        [ -d "$src" ] || git clone -q --bare --filter=blob:none https://github.com/dotnet/diagnostics "$src"
    fi
fi
gitdir=$src
[ -d "$src/.git" ] && gitdir="$src/.git"
mkdir -p "$root/bench/out/gcdump-src"
for f in GCHeapDump.cs Graph.cs MemoryGraph.cs DotNetHeapInfo.cs DotNetHeapDumpGraphReader.cs EventPipeDotNetHeapDumper.cs; do
    git --git-dir="$gitdir" show "$ref_commit:src/Tools/dotnet-gcdump/DotNetHeapDump/$f" > "$root/bench/out/gcdump-src/$f"
done
# The package's InternalsVisibleTo("dotnet-gcdump, PublicKey=...") names the key; a public-key-only
# .snk is that blob as bytes, which is all public signing needs.
dotnet restore "$root/bench/GcdumpCollector" -p:RefSrc=x -p:RefKey=x --nologo -v q >/dev/null 2>&1 || true
client=$(ls "$HOME"/.nuget/packages/microsoft.diagnostics.netcore.client/0.2.661903/lib/net8.0/Microsoft.Diagnostics.NETCore.Client.dll)
strings -n 20 "$client" | grep -o 'dotnet-gcdump, PublicKey=[0-9a-f]*' | head -1 | sed 's/.*=//' \
    | xxd -r -p > "$root/bench/out/gcdump-key.snk"
[ -s "$root/bench/out/gcdump-key.snk" ] || { echo "no dotnet-gcdump key in $client" >&2; exit 1; }
dotnet build "$root/bench/GcdumpCollector" -c Release --nologo -v q -o "$root/bench/out/collector" \
    -p:RefSrc="$root/bench/out/gcdump-src" -p:RefKey="$root/bench/out/gcdump-key.snk" >/dev/null
dotnet build "$root/bench/ClrmdHarness" -c Release --nologo -v q -o "$root/bench/out/clrmd" >/dev/null
workloads="$root/bench/out/workloads"
dotnet build "$root/testapps/Workloads" -c Release --nologo -v q -o "$workloads" >/dev/null
collector="$root/bench/out/collector/dotnet-gcdump.dll"

# --- a workload fed through a fifo ------------------------------------------------------------
wl_pid=
cleanup() {
    [ -n "$wl_pid" ] && kill "$wl_pid" 2>/dev/null || true
    exec 3>&- 2>/dev/null || true
}
trap cleanup EXIT
start_workload() { # SCENARIO [args]: sets wl_pid, waits for the first held=
    rm -f "$out/in.fifo"
    mkfifo "$out/in.fifo"
    dotnet "$workloads/Workloads.dll" "$@" < "$out/in.fifo" > "$out/workload.log" &
    wl_pid=$!
    exec 3> "$out/in.fifo"
    wait_held 1
}
wait_held() { # N: waits until the workload printed its N-th held= line, echoes it
    for _ in $(seq 1200); do
        local n
        n=$(grep -c '^held=' "$out/workload.log" || true)
        if [ "$n" -ge "$1" ]; then grep '^held=' "$out/workload.log" | sed -n "$1p"; return 0; fi
        sleep 0.5
    done
    echo "workload did not answer" >&2; exit 1
}
stop_workload() {
    echo quit >&3; exec 3>&-
    wait "$wl_pid" || true
    wl_pid=
}
timed() { # NAME CMD...: runs CMD under /usr/bin/time -v into $out/NAME.time
    local name=$1; shift
    /usr/bin/time -v -o "$out/$name.time" "$@"
}
pid_of() { sed -n 's/^ready pid=//p' "$out/workload.log"; }

# --- 1 and 2: the leak workload ---------------------------------------------------------------
start_workload heap > /dev/null
pid=$(pid_of)
# The first EventPipe session with the runtime provider makes the target build its
# NativeRuntimeEventSource metadata (~3,500 reflection objects, after that session's GC): a first,
# warm-up snapshot lets every compared snapshot see the same settled heap.
timed a_warm "$clrspy" gcdump -p "$pid" -o "$out/a_warm.gcdump" 2> "$out/a_warm.log"
timed a_core "$clrspy" dump -p "$pid" --type full --compress none -o "$out/a.core" 2> "$out/a_core.log"
timed a_clrspy "$clrspy" gcdump -p "$pid" -o "$out/a_clrspy.gcdump" 2> "$out/a_clrspy.log"
timed a_ref dotnet "$collector" "$pid" "$out/a_ref.gcdump" > /dev/null
timed a_clrspy2 "$clrspy" gcdump -p "$pid" -o "$out/a_clrspy2.gcdump" 2> "$out/a_clrspy2.log"
echo "grow 20000" >&3
wait_held 2 > /dev/null
timed b_ref dotnet "$collector" "$pid" "$out/b_ref.gcdump" > /dev/null
stop_workload
core=$(ls "$out"/a.core* | head -1)
"$clrspy" heap "$out/a_clrspy.gcdump" --json --top 100000000 > "$out/a_clrspy.json"
"$clrspy" heap "$out/a_ref.gcdump" --json --top 100000000 > "$out/a_ref.json"
"$clrspy" heap "$out/a_clrspy2.gcdump" --json --top 100000000 > "$out/a_clrspy2.json"
"$clrspy" heap "$out/a_warm.gcdump" --json --top 100000000 > "$out/a_warm.json"
"$clrspy" heap diff "$out/a_ref.gcdump" "$out/b_ref.gcdump" --json > "$out/diff_ref.json"
timed clrmd dotnet "$root/bench/out/clrmd/ClrmdHarness.dll" "$core" > "$out/clrmd.json"
rm -f "$core"
ref_reader=ok
DIAG_SRC="$src" "$root/bench/gcdump_reference.sh" "$out/a_clrspy.gcdump" > "$out/reader.log" 2>&1 || ref_reader=FAILED

# --- 3: scale ----------------------------------------------------------------------------------
if [ "$scale" = 1 ]; then
    start_workload heap10m --count "$scale_count" > /dev/null
    pid=$(pid_of)
    timed big_a "$clrspy" gcdump -p "$pid" -o "$out/big_a.gcdump" --timeout 120s 2> "$out/big_a.log"
    GCDUMP_VERBOSE=1 timed big_ref dotnet "$collector" "$pid" "$out/big_ref.gcdump" > "$out/big_ref.ms" 2> "$out/big_ref.log"
    echo "grow 100000" >&3
    wait_held 2 > /dev/null
    timed big_b "$clrspy" gcdump -p "$pid" -o "$out/big_b.gcdump" --timeout 120s 2> "$out/big_b.log"
    stop_workload
    timed big_heap "$clrspy" heap "$out/big_a.gcdump" --json --top 20 > "$out/big_heap.json"
    timed big_heap_ref "$clrspy" heap "$out/big_ref.gcdump" --json --top 100000000 > "$out/big_heap_ref.json"
    timed big_diff "$clrspy" heap diff "$out/big_a.gcdump" "$out/big_b.gcdump" --json > "$out/big_diff.json"
    timed big_type "$clrspy" heap "$out/big_a.gcdump" --type Workloads.HeapTreeNode > "$out/big_type.txt"
fi

python3 - "$out" "$scale" "$scale_count" "$ref_reader" <<'PY'
import json, os, re, sys
out, scale, scale_count, ref_reader = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), sys.argv[4]
bad = []
def load(n): return json.load(open(os.path.join(out, n)))
def types(j): return {t["type"]: (t["count"], t["bytes"]) for t in j["types"]}
def timing(n):
    s = open(os.path.join(out, n + ".time")).read()
    w = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", s)
    secs = int(w.group(1) or 0) * 3600 + int(w.group(2)) * 60 + float(w.group(3))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", s).group(1)) / 1024
    return secs, rss
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: bad.append(what)

ORDER = "Workloads.HeapOrder"
def norm(name):
    # ClrMD writes `A<B, C>` and nested generics as `Outer<ARGS>+Inner`; the .gcdump writers
    # `A<B,C>` and `Inner<ARGS>`.
    name = name.replace(", ", ",")
    m = re.match(r"^[^<]*<(.*)>\+(\w+)((?:\[\])*)$", name)
    return f"{m.group(2)}<{m.group(1)}>{m.group(3)}" if m else name
ours, ours2, ref, clrmd = load("a_clrspy.json"), load("a_clrspy2.json"), load("a_ref.json"), load("clrmd.json")
warm = load("a_warm.json")
to, tr = types(ours), types(ref)
check(tr.get(ORDER, (0,))[0] == 12345, f"clrspy reads the reference collector's file: {ORDER} x{tr.get(ORDER, (0,))[0]} (want 12345)")
wl = sorted(t for t in set(to) | set(tr) if "Workloads." in t)
for t in wl:
    check(to.get(t) == tr.get(t), f"{t}: clrspy snapshot {to.get(t)} reference collector {tr.get(t)}")
d = {t["type"]: t for t in load("diff_ref.json")["types"]}
top = load("diff_ref.json")["types"][0]
check(top["type"] == ORDER and top["count_delta"] == 20000,
      f"heap diff of two reference files: top {top['type']} {top['count_delta']:+d} (want {ORDER} +20000)")
for name in ("heap_walk", "reachable"):
    cm = {norm(k): tuple(v) for k, v in clrmd[name]["types"].items()}
    for t in wl:
        if name == "reachable" or t == ORDER:
            check(to.get(t) == cm.get(t), f"ClrMD {name} {t}: {cm.get(t)} clrspy {to.get(t)}")
check(ref_reader == "ok", f"reference reader reads clrspy's file to the same totals ({ref_reader}; bench/out/heapref/reader.log)")

t2 = types(ours2)
cmr = {norm(k): tuple(v) for k, v in clrmd["reachable"]["types"].items()}
rows = [("objects", ours["objects"], ours2["objects"], ref["objects"], clrmd["reachable"]["objects"]),
        ("bytes", ours["bytes"], ours2["bytes"], ref["bytes"], clrmd["reachable"]["bytes"]),
        ("types", len(to), len(t2), len(tr), len(clrmd["reachable"]["types"]))]
print()
print("leak workload (heap), in order taken: core for ClrMD, clrspy snapshot, reference collector, clrspy again")
print(f"{'':<10}{'ClrMD live':>11}{'clrspy':>9}{'/ClrMD':>8}{'ref coll.':>10}{'clrspy 2':>9}{'/ref':>8}")
for name, a, a2, b, c in rows:
    print(f"{name:<10}{c:>11}{a:>9}{a / c:>8.4f}{b:>10}{a2:>9}{a2 / b:>8.4f}")
print(f"types with the same count and bytes: clrspy/ClrMD {sum(1 for t in to if cmr.get(t) == to[t])} of {len(to)}; "
      f"clrspy 2/reference {sum(1 for t in t2 if tr.get(t) == t2[t])} of {len(t2)}")
print(f"warm-up snapshot (first session ever): {warm['objects']} objects")
print(f"{'ClrMD heap walk':<22}{clrmd['heap_walk']['objects']:>12} objects (incl. not yet collected)")
print(f"{'unreachable in clrspy':<22}{ours.get('unreachable_objects', 0):>12}")
for n, label in (("a_clrspy", "clrspy gcdump -p"), ("a_ref", "reference collector"), ("a_core", "clrspy dump full"), ("clrmd", "ClrMD walk + mark")):
    s, r = timing(n)
    print(f"{label:<22}{s:>10.2f} s {r:>8.0f} MB peak RSS")

if scale:
    big, bigr = load("big_heap.json"), load("big_heap_ref.json")
    node = "Workloads.HeapTreeNode"
    bt, brt = types(big), types(bigr)
    check(bt.get(node, (0,))[0] == scale_count, f"scale: clrspy snapshot {node} x{bt.get(node, (0,))[0]} (want {scale_count})")
    undefined = brt.get("UNDEFINED", (0,))[0]
    if undefined == 0:
        check(bt.get(node) == brt.get(node), f"scale: {node} clrspy {bt.get(node)} reference collector {brt.get(node)}")
    else:
        # Nodes that edges name but no node event defined. dotnet-gcdump's graph reader stops
        # taking nodes at MaxNodeCount = 10,000,000 graph nodes (edge targets not yet defined
        # count too) and logs "Exceeded max node count". Shown, not failed: the reference is
        # what is incomplete, and clrspy reads its file as it is.
        cap = [l.strip() for l in open(os.path.join(out, "big_ref.log")) if "max node count" in l]
        print(f"note scale: the reference collector's file is incomplete: {node} x{brt.get(node, (0,))[0]}, "
              f"UNDEFINED x{undefined} (referenced, never defined); its log: {cap[0] if cap else '-'}")
    dtop = load("big_diff.json")["types"][0]
    check(dtop["type"] == node and dtop["count_delta"] == 100000,
          f"scale: heap diff top {dtop['type']} {dtop['count_delta']:+d} (want {node} +100000)")
    print()
    print(f"scale: {big['objects']} objects in clrspy's snapshot, {bigr['objects']} in the reference's")
    print(f"{'step':<34}{'wall s':>9}{'peak RSS MB':>13}")
    res = {}
    for n, label in (("big_a", "clrspy gcdump -p (snapshot)"), ("big_ref", "reference collector (same)"),
                     ("big_b", "clrspy gcdump -p (after grow)"), ("big_heap", "clrspy heap FILE"),
                     ("big_heap_ref", "clrspy heap REF-FILE"), ("big_diff", "clrspy heap diff A B"),
                     ("big_type", "clrspy heap FILE --type T")):
        res[n] = timing(n)
        print(f"{label:<34}{res[n][0]:>9.2f}{res[n][1]:>13.0f}")
    print(f"{'snapshot: clrspy / reference':<34}{res['big_a'][0] / res['big_ref'][0]:>9.2f}{res['big_a'][1] / res['big_ref'][1]:>13.2f}")
    for n in ("big_heap", "big_diff", "big_type"):
        check(res[n][0] < 10 and res[n][1] < 2048, f"scale: {n} under 10 s and 2 GB ({res[n][0]:.2f} s, {res[n][1]:.0f} MB)")
# clrspy stops its dump session when its tap sees the dump's GC end; when the tap fell behind and
# skipped the blocks holding it, it waits for --timeout and then finds the dump whole in the trace.
for n in ["a_warm", "a_clrspy", "a_clrspy2"] + (["big_a", "big_b"] if scale else []):
    log = open(os.path.join(out, n + ".log")).read()
    check("did not complete on the live stream" not in log, f"{n}: the snapshot ended with the dump's GC, not at --timeout")
print()
print("all checks pass" if not bad else f"{len(bad)} checks failed")
sys.exit(1 if bad else 0)
PY
