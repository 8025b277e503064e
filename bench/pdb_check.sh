#!/usr/bin/env bash
# clrspy's portable PDB reader (readytorun::pdb) against System.Reflection.Metadata: every
# sequence point of each PDB given (default: every .pdb under ~/.nuget/packages, and
# testdata/lines' portable and embedded PDBs), printed by both and compared line for line;
# with each reader's time and peak memory per file and in all.
#
#   bench/pdb_check.sh [FILE.pdb|FILE.dll ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build -q --release -p readytorun --example pdb_lines --manifest-path "$root/Cargo.toml"
ours="$root/target/release/examples/pdb_lines"
cp -r "$root/bench/pdb_check" "$work/src"
dotnet build -c Release -o "$work/ref" "$work/src" >/dev/null
theirs=(dotnet "$work/ref/pdb_check.dll")

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    mapfile -t files < <(find "$HOME/.nuget/packages" -name '*.pdb' 2>/dev/null | sort)
    files+=("$root/crates/readytorun/testdata/lines/Lines.pdb" "$root/crates/readytorun/testdata/lines/Lines.embedded.dll")
fi

same=0 differ=0 points=0 bytes=0 windows=0
ours_s=0 theirs_s=0 ours_kb=0 theirs_kb=0
for f in "${files[@]}"; do
    # Windows PDBs are not portable ones: both readers refuse them.
    if ! /usr/bin/time -f '%e %M' -o "$work/t1" "$ours" "$f" >"$work/a" 2>"$work/ea"; then
        if head -c 4 "$f" | grep -q BSJB; then
            echo "FAIL (ours refused a portable PDB): $f: $(cat "$work/ea")"
            differ=$((differ + 1))
        else
            windows=$((windows + 1))
        fi
        continue
    fi
    /usr/bin/time -f '%e %M' -o "$work/t2" "${theirs[@]}" "$f" >"$work/b"
    read -r s1 k1 <"$work/t1"
    read -r s2 k2 <"$work/t2"
    ours_s=$(echo "$ours_s + $s1" | bc)
    theirs_s=$(echo "$theirs_s + $s2" | bc)
    [ "$k1" -gt "$ours_kb" ] && ours_kb=$k1
    [ "$k2" -gt "$theirs_kb" ] && theirs_kb=$k2
    if cmp -s "$work/a" "$work/b"; then
        same=$((same + 1))
    else
        differ=$((differ + 1))
        echo "DIFFERENT: $f"
        diff "$work/a" "$work/b" | head -5
    fi
    points=$((points + $(wc -l <"$work/a")))
    bytes=$((bytes + $(stat -c %s "$f")))
done
echo "files: $same identical, $differ different ($windows Windows PDBs, refused); $points sequence points from $((bytes / 1024)) KiB of PDBs"
echo "time in all: ours ${ours_s} s, System.Reflection.Metadata ${theirs_s} s (with its runtime's start); peak RSS ours ${ours_kb} KB, theirs ${theirs_kb} KB"
[ "$differ" -eq 0 ]
