#!/usr/bin/env bash
# The Python SDK's tests (python/): the package installed as the README says, with no access to PyPI, into a
# venv that sees Debian's packages (python3-httpx, python3-websockets, python3-pytest), then run against a
# private daemon that the SDK starts through ./paddock. Run by scripts/test.sh after the Java suite. The two
# install lines are the README's: Debian's Python (/usr/bin/python3, whatever python3 comes first on the PATH),
# and the SDK's own build backend (python/_build), so neither setuptools nor wheel is needed.
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
venv="$root/python/.venv"
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --no-index --no-build-isolation "$root/python"
cd "$root/python"
# Every test on both isolation tiers: the private daemon's default tier is runc, then gVisor.
for tier in runc runsc; do
  echo "python tests, default tier $tier" >&2
  PADDOCK_DEFAULT_RUNTIME=$tier PADDOCK_COMMAND="$root/paddock" "$venv/bin/python" -m pytest -q -p no:cacheprovider tests
done
