#!/usr/bin/env bash
# The Debian package (module paddock-deb) as an operator installs it: built by `mvn package`, lintian finds no
# error, `dpkg -i` installs it, systemd-analyze verify accepts its unit, `paddock run -- echo hi` works from
# the installed files alone, the daemon started as the unit starts it (its options file, its capability bounding
# set, no new privileges) keeps a sandbox across a reinstall and a restart, and `dpkg -r` / `dpkg -P` remove the
# package's files without touching /var/lib/paddock. Run by scripts/test.sh, as root, after the Maven suite
# (which builds the package); it starts real sandboxes. Leaves nothing behind: the package is purged, its
# sandbox destroyed, and /var/lib/paddock and /run/paddock are removed only if this script made them.
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$root"
say() { echo "test-deb: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "must run as root (it installs the package)"
if dpkg-query -W -f='${Status}' paddock 2>/dev/null | grep -q 'ok installed'; then
  fail "a paddock package is installed on this host already; this test installs and purges its own"
fi

deb=$(ls -t paddock-deb/target/paddock_*.deb 2>/dev/null | head -n 1 || true)
if [[ -z $deb || paddock-cli/target/paddock.jar -nt $deb ]]; then
  say "building the package (mvn package -pl paddock-deb -am)…"
  mvn -B -q -o -DskipTests -Dstyle.color=never -pl paddock-deb -am package
  deb=$(ls -t paddock-deb/target/paddock_*.deb | head -n 1)
fi
started=$SECONDS

work=$(mktemp -d)
chmod 711 "$work"
pid=
sandbox=
installed=
var_existed=; [[ -e /var/lib/paddock ]] && var_existed=1
run_existed=; [[ -e /run/paddock ]] && run_existed=1
remove_made() { # remove_made DIR: a directory this test made, with whatever is mounted under it
  findmnt -rn -o TARGET | grep -E "^$1(/|$)" | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf "$1"
}
cleanup() {
  local rc=$?
  set +e
  if [[ -n $sandbox && -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    client rm "$sandbox" >/dev/null 2>&1
  fi
  [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  # A sandbox no daemon could remove (the test failed with its daemon gone): runc's own delete, cgroup and all.
  for c in $(runc --root "$work/state/runc" list -q 2>/dev/null); do runc --root "$work/state/runc" delete --force "$c"; done
  [[ -n $installed ]] && dpkg -P paddock >/dev/null 2>&1
  rm -f /var/lib/paddock/.test-deb-marker
  remove_made "$work"
  [[ -n $var_existed ]] || remove_made /var/lib/paddock
  [[ -n $run_existed ]] || remove_made /run/paddock
  exit "$rc"
}
trap cleanup EXIT

# The package's fields and lintian.
[[ $(dpkg-deb -f "$deb" Package) == paddock ]] || fail "$deb: not the paddock package"
version=$(dpkg-deb -f "$deb" Version)
want=$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' pom.xml | head -n 1)
[[ $version == "${want/-/"~"}" ]] || fail "package version $version, from Maven's $want"
depends=$(dpkg-deb -f "$deb" Depends)
for d in runc mmdebstrap btrfs-progs iproute2 nftables java17-runtime-headless; do
  [[ $depends == *"$d"* ]] || fail "Depends lacks $d: $depends"
done
[[ $depends != *slirp4netns* ]] || fail "Depends names slirp4netns, which Paddock no longer uses"
lintian --fail-on error --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>&1 || { cat "$work/lintian.txt" >&2; fail "lintian: errors"; }
grep '^E:' "$work/lintian.txt" >&2 && fail "lintian: errors"
say "lintian: no errors ($(grep -c '^W:' "$work/lintian.txt" || true) warnings)"

# Install.
dpkg -i "$deb" >"$work/dpkg.txt" 2>&1 || { cat "$work/dpkg.txt" >&2; fail "dpkg -i $deb"; }
installed=1
for f in /usr/bin/paddock /usr/share/paddock/paddock.jar /usr/share/paddock/paddock-java \
    /lib/systemd/system/paddock.service /etc/paddock/paddock.conf /usr/share/man/man1/paddock.1.gz; do
  [[ -e $f ]] || fail "dpkg -i: $f is not installed"
done
dpkg-query -W -f='${Conffiles}\n' paddock | grep -q ' /etc/paddock/paddock.conf ' || fail "paddock.conf is not a conffile"

# The unit, as systemd would load it (PID 1 need not be systemd): no error and no warning at all.
unit=/lib/systemd/system/paddock.service
man_opt=(); command -v man >/dev/null || man_opt=(--man=no)
systemd-analyze verify "${man_opt[@]}" "$unit" >"$work/verify.txt" 2>&1 || { cat "$work/verify.txt" >&2; fail "systemd-analyze verify $unit"; }
[[ ! -s $work/verify.txt ]] || { cat "$work/verify.txt" >&2; fail "systemd-analyze verify $unit: warnings"; }
grep -qx 'KillMode=process' "$unit" || fail "$unit: a stop would kill the sandboxes (KillMode)"
grep -qx 'ExecStart=/usr/bin/paddock serve $PADDOCK_OPTIONS' "$unit" || fail "$unit: ExecStart"
# The unit's capability bounding set and no_new_privs, for the daemon this test starts (setpriv applies them
# as systemd would): what a sandbox and the tools it needs still get under the unit.
drop=$(sed -n 's/^CapabilityBoundingSet=~//p' "$unit" | tr 'A-Z' 'a-z' | sed 's/cap_/-/g; s/ /,/g')
[[ -n $drop ]] || fail "$unit: no CapabilityBoundingSet=~"
grep -qx 'NoNewPrivileges=yes' "$unit" || fail "$unit: NoNewPrivileges"
as_unit=(setpriv --no-new-privs --bounding-set "$drop")
# The environment systemd gives a service: PATH, no locale, no HOME.
sysenv=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)

# `paddock run` from the installed files alone: nothing of this checkout on PATH or in the working directory.
out=$(cd "$work" && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$work" /usr/bin/paddock run -- echo hi 2>"$work/run.err") \
  || { cat "$work/run.err" >&2; fail "paddock run -- echo hi"; }
[[ $out == hi ]] || { cat "$work/run.err" >&2; fail "paddock run -- echo hi printed '$out'"; }
say "installed paddock run -- echo hi: $out"

# The daemon as the unit runs it, with its options file, on a port and in directories of this test's own.
port=$(( 20000 + RANDOM % 20000 ))
mkdir -m 711 "$work/state"
starts=0
serve() {
  starts=$((starts + 1))
  log=$work/serve.$starts.log
  ( set -a; . /etc/paddock/paddock.conf; set +a
    # shellcheck disable=SC2086 # ExecStart's $PADDOCK_OPTIONS: split at blanks, as systemd does
    exec "${sysenv[@]}" PADDOCK_JAVA_OPTIONS="$PADDOCK_JAVA_OPTIONS" "${as_unit[@]}" /usr/bin/paddock serve $PADDOCK_OPTIONS \
      --listen "127.0.0.1:$port" --data-dir "$work/data" --state-dir "$work/state" ) >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 120); do
    grep -q 'paddock: listening on' "$log" && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "the daemon exited"; }
    sleep 0.5
  done
  cat "$log" >&2
  fail "the daemon did not listen within 60 s"
}
client() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin PADDOCK_URL="http://127.0.0.1:$port" PADDOCK_TOKEN="$(cat "$work/data/token")" /usr/bin/paddock "$@"; }
stop() { # what `systemctl stop` does with KillMode=process: SIGTERM to the JVM alone; 143 is SuccessExitStatus
  kill -TERM "$pid"
  local status=0
  wait "$pid" || status=$?
  pid=
  [[ $status -eq 143 || $status -eq 0 ]] || { cat "$log" >&2; fail "the daemon stopped with status $status"; }
}
serve
sandbox=$(client create --timeout 10m)
client exec "$sandbox" -- sh -c 'echo kept > /tmp/before-upgrade'
# An upgrade: the same package again (prerm upgrade, then postinst configure with the old version), then the
# restart that postinst asks systemd for.
dpkg -i "$deb" >"$work/dpkg.txt" 2>&1 || { cat "$work/dpkg.txt" >&2; fail "dpkg -i (upgrade)"; }
stop
serve
kept=$(client exec "$sandbox" -- cat /tmp/before-upgrade) || { cat "$log" >&2; fail "the sandbox did not survive the restart"; }
[[ $kept == kept ]] || fail "after the restart the sandbox's file reads '$kept'"
client ls >"$work/ls.txt"
grep -q "$sandbox" "$work/ls.txt" || fail "the restarted daemon does not list $sandbox"
say "the sandbox survived the upgrade and the daemon's restart"
client rm "$sandbox" >/dev/null
sandbox=
stop
[[ -z $(ls -A "$work/state/sandboxes" 2>/dev/null) ]] || fail "left in the state directory: $(ls -A "$work/state/sandboxes")"
[[ -z $(runc --root "$work/state/runc" list -q 2>/dev/null) ]] || fail "left running: $(runc --root "$work/state/runc" list -q)"

# Removal: the package's files go, /var/lib/paddock stays as it was; purge takes the conffile and the unit's state.
mkdir -p /var/lib/paddock
echo "test-deb $$" >/var/lib/paddock/.test-deb-marker
snapshot() { find /var/lib/paddock -maxdepth 1 -printf '%p %m %u\n' | sort; }
before=$(snapshot)
dpkg -r paddock >"$work/dpkg.txt" 2>&1 || { cat "$work/dpkg.txt" >&2; fail "dpkg -r paddock"; }
for f in /usr/bin/paddock /usr/share/paddock /lib/systemd/system/paddock.service /usr/share/man/man1/paddock.1.gz; do
  [[ ! -e $f ]] || fail "dpkg -r left $f"
done
[[ $(snapshot) == "$before" ]] || fail "dpkg -r changed /var/lib/paddock"
[[ $(cat /var/lib/paddock/.test-deb-marker) == "test-deb $$" ]] || fail "dpkg -r changed /var/lib/paddock"
dpkg -P paddock >"$work/dpkg.txt" 2>&1 || { cat "$work/dpkg.txt" >&2; fail "dpkg -P paddock"; }
installed=
[[ ! -e /etc/paddock ]] || fail "dpkg -P left /etc/paddock"
[[ ! -L /etc/systemd/system/multi-user.target.wants/paddock.service && ! -L /etc/systemd/system/paddock.service ]] \
  || fail "dpkg -P left the unit's enablement or mask"
[[ $(snapshot) == "$before" ]] || fail "dpkg -P changed /var/lib/paddock"
say "ok: built, lintian, installed, verified, ran, kept a sandbox across an upgrade, removed and purged ($((SECONDS - started)) s)"
