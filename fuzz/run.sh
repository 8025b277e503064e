#!/usr/bin/env bash
# Builds every fuzz target with coverage instrumentation (libFuzzer, stable toolchain) and runs
# each for SECONDS (default 5) from a seed corpus of the repository's own traces and rules files.
# A crash, panic, leak of time (-timeout) or failed assertion fails the run and leaves the input
# in fuzz/artifacts/TARGET/.
#
#   fuzz/run.sh [SECONDS] [TARGET ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/fuzz"
secs=${1:-5}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(read_slice read_stream scan event_views rules_parse ipc_replies gcdump_read core_read pdb_read)

# What cargo-fuzz passes for coverage-guided fuzzing, minus the sanitizer (nightly only).
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
export CARGO_TARGET_DIR="$root/fuzz/target"
# With an explicit --target, RUSTFLAGS reach the targets but not build scripts.
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --locked --bins -q --target "$host"
bin="$CARGO_TARGET_DIR/$host/release"

seeds() {
    local dir=$1 t=$2
    mkdir -p "$dir"
    case $t in
        read_slice|read_stream|scan|event_views)
            for f in "$root"/crates/nettrace/tests/data/*.nettrace; do
                [ -f "$f" ] || continue
                # Small seeds: the head of each trace (libFuzzer caps an input's length anyway).
                head -c 4096 "$f" > "$dir/$(basename "$f").head"
            done ;;
        rules_parse)
            cp "$root"/fuzz/seeds/rules_parse/* "$dir/" ;;
        gcdump_read)
            cp "$root"/fuzz/seeds/gcdump_read/* "$dir/" ;;
        core_read)
            cp "$root"/fuzz/seeds/core_read/* "$dir/" ;;
        pdb_read)
            cp "$root"/crates/readytorun/testdata/lines/Lines.pdb "$root"/crates/readytorun/testdata/lines/Lines.embedded.dll "$dir/" ;;
    esac
}

for t in "${targets[@]}"; do
    corpus="$root/fuzz/corpus/$t"
    seeds "$corpus" "$t"
    mkdir -p "$root/fuzz/artifacts/$t"
    echo "fuzz: $t for ${secs}s"
    "$bin/$t" "$corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -artifact_prefix="$root/fuzz/artifacts/$t/" -print_final_stats=1 2>&1 \
        | grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+== ERROR|.*panicked|SUMMARY|Done)' || true
    # libFuzzer exits non-zero on a finding; the pipe above hides it, so check for artifacts.
    if compgen -G "$root/fuzz/artifacts/$t/*" > /dev/null; then
        echo "fuzz: $t found a failing input:" "$root"/fuzz/artifacts/"$t"/* >&2
        exit 1
    fi
done
