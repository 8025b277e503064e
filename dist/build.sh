#!/usr/bin/env bash
# Builds clrspy's release for this machine's architecture, for users without Rust:
#
#   dist/out/clrspy-VERSION-ARCH-linux-gnu.tar.gz   the binary (stripped), completions (bash,
#                                                   zsh, fish), a man page per command, the
#                                                   license and the README
#   dist/out/clrspy-VERSION-ARCH-linux-gnu.debug    the binary's debug symbols (gdb, perf and
#                                                   addr2line find them by its debuglink)
#   dist/out/clrspy_VERSION_DEBARCH.deb             the same files as a Debian package
#                                                   (`dpkg -i`, `dpkg -r` removes them all)
#   dist/out/SHA256SUMS                             the three files' sums
#
#   dist/build.sh [--out DIR] [--no-build]
#
# The binary needs the oldest glibc its symbols name (read from the linked binary, written
# into `clrspy --version` and the package's dependency): 2.34 when built here (Debian 12,
# glibc 2.36; 2.34 is where libpthread joined libc). An older floor needs an older sysroot to
# link against (a Debian 11 or RHEL 8 build root, or cargo-zigbuild's glibc target), which this
# machine has not; a static musl build would not do, as `dump analyze` loads the runtime's
# libmscordaccore.so, a glibc library.
#
# arm64: run this script on an arm64 Linux machine (everything in it is architecture-neutral:
# the names come from `uname -m` and `dpkg --print-architecture`), or cross-build with
# `rustup target add aarch64-unknown-linux-gnu`, an aarch64 linker and libc
# (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross) and `--target aarch64-unknown-linux-gnu`,
# then binutils for aarch64 to strip it. The sampler's stack walk and the dump reader's
# registers have arm64 paths; neither was run on arm64 here. Needs cargo (the offline registry:
# ../shared/cargo-offline.sh), objcopy and objdump (binutils), dpkg-deb, gzip, tar.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/dist/out
build=1
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=$(realpath -m "$2"); shift 2 ;;
        --no-build) build=0; shift ;;
        *) echo "usage: dist/build.sh [--out DIR] [--no-build]" >&2; exit 2 ;;
    esac
done
cd "$root"
for tool in objcopy objdump dpkg-deb gzip tar sha256sum; do
    type -P $tool > /dev/null || { echo "dist/build.sh: $tool is missing" >&2; exit 1; }
done
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
homepage=$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(uname -m)
debarch=$(dpkg --print-architecture 2> /dev/null || echo "$arch")
name=clrspy-$version-$arch-linux-gnu
bin=target/release/clrspy

# Two passes: the first links the binary and tells which glibc it needs; the second writes
# that into --version (only the clrspy crate is rebuilt).
if [ $build = 1 ]; then
    cargo build --release --locked -p clrspy
fi
glibc=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
if [ $build = 1 ]; then
    CLRSPY_GLIBC_NEEDED=$glibc cargo build --release --locked -p clrspy
fi
echo "dist: clrspy $version for $arch needs glibc $glibc or later"

rm -rf "$out" && mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
tree=$stage/$name
mkdir -p "$tree/completions" "$tree/man"
# The binary without its debug sections; they go beside it, found again by the debuglink.
objcopy --only-keep-debug "$bin" "$out/$name.debug"
objcopy --strip-debug --strip-unneeded --add-gnu-debuglink="$out/$name.debug" "$bin" "$tree/clrspy"
chmod 755 "$tree/clrspy"
"$tree/clrspy" completions bash > "$tree/completions/clrspy.bash"
"$tree/clrspy" completions zsh > "$tree/completions/_clrspy"
"$tree/clrspy" completions fish > "$tree/completions/clrspy.fish"
"$tree/clrspy" man --dir "$tree/man" 2> /dev/null
gzip -9n "$tree"/man/*.1
cp LICENSE README.md "$tree/"
cat > "$tree/INSTALL" << EOF
clrspy $version for Linux $arch (glibc $glibc or later; no .NET SDK, no Rust needed)

  sudo install -m 755 clrspy /usr/local/bin/
  sudo install -Dm 644 completions/clrspy.bash /usr/local/share/bash-completion/completions/clrspy
  sudo install -Dm 644 completions/_clrspy /usr/local/share/zsh/site-functions/_clrspy
  sudo install -Dm 644 completions/clrspy.fish /usr/local/share/fish/vendor_completions.d/clrspy.fish
  sudo install -Dm 644 -t /usr/local/share/man/man1 man/*.1.gz

Then: clrspy ps, clrspy doctor, clrspy profile -- dotnet app.dll
EOF
tar -C "$stage" --owner=0 --group=0 --numeric-owner --sort=name -czf "$out/$name.tar.gz" "$name"

# The Debian package: the same files where Debian keeps them.
deb=$stage/deb
install -Dm 755 "$tree/clrspy" "$deb/usr/bin/clrspy"
install -Dm 644 "$tree/completions/clrspy.bash" "$deb/usr/share/bash-completion/completions/clrspy"
install -Dm 644 "$tree/completions/_clrspy" "$deb/usr/share/zsh/vendor-completions/_clrspy"
install -Dm 644 "$tree/completions/clrspy.fish" "$deb/usr/share/fish/vendor_completions.d/clrspy.fish"
install -d "$deb/usr/share/man/man1"
install -m 644 "$tree"/man/*.1.gz "$deb/usr/share/man/man1/"
install -Dm 644 LICENSE "$deb/usr/share/doc/clrspy/copyright"
size=$(du -sk "$deb/usr" | cut -f1)
mkdir -p "$deb/DEBIAN"
cat > "$deb/DEBIAN/control" << EOF
Package: clrspy
Version: $version
Architecture: $debarch
Maintainer: clrspy developers <clrspy@localhost>
Installed-Size: $size
Depends: libc6 (>= $glibc), libgcc-s1
Section: devel
Priority: optional
Homepage: $homepage
Description: profile and diagnose .NET applications
 Records EventPipe traces (attach or launch) with a sampler that does not suspend
 the runtime, and reports CPU, waits, allocations, exceptions, locks, GCs, requests
 and hangs; heap snapshots and their diff; counters, stacks, top and logs; core
 dumps written and analysed with no SDK; a hand-off bundle for support engineers.
EOF
dpkg-deb --root-owner-group -Zxz --build "$deb" "$out/clrspy_${version}_$debarch.deb" > /dev/null
(cd "$out" && sha256sum "$name.tar.gz" "$name.debug" "clrspy_${version}_$debarch.deb" > SHA256SUMS)
ls -l "$out"
