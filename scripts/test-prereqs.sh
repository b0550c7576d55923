#!/usr/bin/env bash
# The launcher's first-use installs, without touching the host's packages: ./paddock's prerequisite check runs
# with a PATH of the host's tools minus runsc and with a stand-in apt-get that records what it was asked to
# install. Checks that `paddock run --runtime runsc` (every spelling), $PADDOCK_DEFAULT_RUNTIME=runsc and
# `paddock serve` ask apt-get for runsc as runc is asked for, that a plain run does not, and that without root
# the command to run is named. Run by scripts/test.sh.
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin="$work/bin"
mkdir "$bin"
for tool in bash env id sort printf dirname readlink cat java javac mvn make gcc musl-gcc runc mkfifo mmdebstrap \
    mkfs.btrfs ip nft nsenter; do
  p=$(command -v "$tool") || { echo "test-prereqs: $tool is needed on this host" >&2; exit 1; }
  [[ $p == /* ]] && ln -s "$p" "$bin/$tool"
done
cat >"$bin/apt-get" <<APT
#!/bin/bash
echo "\$*" >>"$work/apt.log"
APT
chmod +x "$bin/apt-get"
# The launcher up to its prerequisite check: the same lines, stopped before it builds anything.
sed -n '1,/prereqs.sh/p' "$root/paddock" >"$work/paddock"
ln -s "$root/scripts" "$work/scripts"
fail=0
check() { # check WANT_RUNSC(yes|no|optional) ARGS...
  local want=$1
  shift
  rm -f "$work/apt.log"
  env -i PATH="$bin" HOME="$work" ${DEFAULT:+PADDOCK_DEFAULT_RUNTIME=$DEFAULT} bash "$work/paddock" "$@" \
    2>"$work/err" || true
  local got=no
  grep -q 'install.*runsc' "$work/apt.log" 2>/dev/null && got=yes
  if [[ $got != "$want" ]]; then
    echo "FAIL: paddock $* ${DEFAULT:+(PADDOCK_DEFAULT_RUNTIME=$DEFAULT) }: runsc installed: $got, wanted $want" >&2
    cat "$work/err" >&2
    fail=1
  fi
}
check yes run --runtime runsc -- uname -a
check yes run --runtime=runsc -- uname -a
check yes serve --default-runtime runsc
check yes serve
check no run -- echo hello
check no run -- echo --runtime runsc
check no run --runtime runc -- uname -a
DEFAULT=runsc check yes run -- uname -a
# Without root: nothing installed, and the command to run is named.
if command -v setpriv >/dev/null; then
  rm -f "$work/apt.log"
  chmod 755 "$work"
  if setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="$bin" HOME="$work" \
      bash "$work/paddock" run --runtime runsc -- true 2>"$work/err"; then
    echo "FAIL: without root, a missing runsc did not stop the command" >&2
    fail=1
  elif ! grep -q 'sudo apt-get install -y runsc' "$work/err" || [[ -e $work/apt.log ]]; then
    echo "FAIL: without root, the command to install runsc was not named:" >&2
    cat "$work/err" >&2
    fail=1
  fi
fi
((fail == 0)) && echo "test-prereqs: ok" >&2
exit $fail
