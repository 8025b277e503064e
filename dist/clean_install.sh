#!/usr/bin/env bash
# Installs what dist/build.sh made on a clean machine and runs the first commands a user runs:
# a throwaway root (this machine's files under an overlay, in a mount namespace of its own)
# with no Rust, no cargo and no clrspy source in it, where
#
#   1. the .deb is installed with dpkg -i; clrspy --version, ps, profile -- dotnet app.dll
#      and doctor run; bash completes `clrspy rec`; man shows a page; dpkg -r removes it and
#      leaves none of its files;
#   2. the .tar.gz is unpacked and installed as its INSTALL file says; the same commands run;
#      the files are removed.
#
#   dist/clean_install.sh [DIST_OUT]     (as root; default dist/out)
#
# The .NET runtime stays (the app needs it); the test app is built here first (Workloads'
# cpu scenario) and copied in. Nothing outside the overlay changes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dist=$(realpath "${1:-$root/dist/out}")
[ "$(id -u)" = 0 ] || { echo "clean_install.sh: needs root (mount namespaces, chroot)" >&2; exit 1; }
deb=$(ls "$dist"/clrspy_*.deb)
tgz=$(ls "$dist"/clrspy-*-linux-gnu.tar.gz)
work=$(mktemp -d /tmp/clrspy-clean.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The app, built with the SDK out here.
DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 dotnet build -c Release -o "$work/app" \
    "$root/testapps/Workloads/Workloads.csproj" > "$work/build.log" 2>&1 \
    || { cat "$work/build.log"; exit 1; }
cp "$deb" "$tgz" "$work/"

# Inside the throwaway root.
cat > "$work/inside.sh" << 'EOF'
set -euo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
rm -rf /root/.cargo /root/.rustup /usr/local/cargo /usr/local/rustup /work
if command -v cargo rustc > /dev/null; then echo "FAIL: Rust is still here"; exit 1; fi
echo "== no Rust, no cargo, no source"
check_runs() {
    clrspy --version | head -2
    clrspy ps > /x/ps.txt && echo "ps: $(wc -l < /x/ps.txt) lines"
    clrspy profile -o /x/p.nettrace -- dotnet /x/app/Workloads.dll cpu --seconds 3 > /x/profile.txt 2>&1
    grep -q "Cpu.Burn" /x/profile.txt || { echo "FAIL: profile did not name the burner"; cat /x/profile.txt; exit 1; }
    echo "profile: $(grep -m1 'Cpu.Burn' /x/profile.txt | sed 's/^ *//')"
    clrspy doctor --symptom high-cpu > /x/doctor.txt 2>&1 || { echo "FAIL: doctor"; cat /x/doctor.txt; exit 1; }
    echo "doctor --symptom high-cpu: $(grep -c . /x/doctor.txt) lines, first: $(head -1 /x/doctor.txt)"
}
echo "== 1. the Debian package"
dpkg -i /x/clrspy_*.deb > /dev/null
check_runs
bash -c 'source /usr/share/bash-completion/completions/clrspy; COMP_WORDS=(clrspy rec); COMP_CWORD=1; _clrspy clrspy rec clrspy; printf "%s\n" "${COMPREPLY[@]}"' | grep -qx record
echo "completion: clrspy rec<Tab> offers record"
# Where the bash-completion package loads it from (this machine's bash has no loader on).
loaded=$(bash -c 'source /usr/share/bash-completion/completions/clrspy && complete -p clrspy')
echo "$loaded" | grep -q "_clrspy" || { echo "FAIL: complete -p clrspy: $loaded"; exit 1; }
echo "complete -p clrspy: $loaded"
MANPAGER=cat man clrspy-record 2>/dev/null | grep -q "clrspy record" && echo "man clrspy-record: shown"
files=$(dpkg -L clrspy | while read -r f; do [ -f "$f" ] && echo "$f"; done)
dpkg -r clrspy > /dev/null
left=$(for f in $files; do [ -e "$f" ] && echo "$f"; done || true)
[ -z "$left" ] || { echo "FAIL: dpkg -r left $left"; exit 1; }
echo "dpkg -r: $(echo "$files" | wc -l) files installed, none left"
echo "== 2. the archive"
mkdir -p /x/unpack && tar -C /x/unpack -xzf /x/clrspy-*-linux-gnu.tar.gz
cd /x/unpack/clrspy-*
grep '^  sudo ' INSTALL | sed 's/^  sudo //' | bash -e
hash -r
echo "installed as INSTALL says: $(command -v clrspy)"
check_runs
rm -f /usr/local/bin/clrspy /usr/local/share/bash-completion/completions/clrspy \
    /usr/local/share/zsh/site-functions/_clrspy /usr/local/share/fish/vendor_completions.d/clrspy.fish \
    /usr/local/share/man/man1/clrspy*.1.gz
echo "== clean install: ok"
EOF

unshare -m --propagation private bash -e -c '
    w=$1
    mkdir -p "$w/t" && mount -t tmpfs tmpfs "$w/t"
    mkdir -p "$w/t/u" "$w/t/w" "$w/t/m"
    mount -t overlay overlay -o "lowerdir=/,upperdir=$w/t/u,workdir=$w/t/w" "$w/t/m"
    for d in proc sys dev; do mount --rbind "/$d" "$w/t/m/$d"; done
    mkdir -p "$w/t/m/x" && mount --bind "$w" "$w/t/m/x"
    chroot "$w/t/m" bash /x/inside.sh
' bash "$work" 2>&1 | sed 's/^/  /'
