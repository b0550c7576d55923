#!/usr/bin/env bash
# Runs Paddock's whole test suite: unit, contract and attack tests against real runc and runsc, then the
# Debian package's install test and the Python SDK's tests, as root.
# Installs what is missing when run as root (Debian/Ubuntu), and says what to do otherwise.
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$root"
scripts/prereqs.sh test
# The launcher's first-use installs (each tier's package), with a stand-in apt-get.
scripts/test-prereqs.sh
# A canary in the engine's environment: the attack tests check it never reaches a sandbox (ATTACKS.md A49).
export PADDOCK_TEST_CANARY="canary-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# A failing test's report and output are printed again at the end, so that the log of a run that failed
# once (a flake) keeps what it measured even when the reports directory is gone with the machine.
started=$(mktemp)
trap 'rm -f "$started"' EXIT
status=0
mvn -B -Dstyle.color=never verify "$@" || status=$?
if [ "$status" -ne 0 ]; then
  scripts/print-failed-tests.sh "$started" || true
  exit "$status"
fi
# The Debian package (paddock-deb, built by the suite's `mvn verify`), as an operator installs, runs and removes it.
scripts/test-deb.sh
# The Python SDK, as a user installs and runs it.
scripts/test-python.sh
