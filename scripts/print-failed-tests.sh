#!/usr/bin/env bash
# Prints, for every test class that failed in this run's surefire or failsafe reports (those newer than the
# file named by $1, or all without it), its report text and what its failing tests printed: the class's
# -output.txt where output goes to a file, else the <system-out>/<system-err> the XML report kept of each
# failing test. For scripts/test.sh after a failed `mvn verify`; prints nothing when no report failed.
set -uo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
newer=()
if [ $# -gt 0 ] && [ -e "$1" ]; then newer=(-newer "$1"); fi
find "$root" -maxdepth 5 -path '*/target/*-reports/*.txt' ! -name '*-output.txt' "${newer[@]}" -print 2>/dev/null | sort |
while IFS= read -r report; do
  grep -qE '<<< (FAILURE|ERROR)!' "$report" || continue
  dir=$(dirname "$report")
  class=$(basename "$report" .txt)
  echo "======== failed: $class ($report)"
  cat "$report"
  if [ -s "$dir/$class-output.txt" ]; then
    echo "-------- output of $class (last 400 lines of $dir/$class-output.txt)"
    tail -n 400 "$dir/$class-output.txt"
  elif [ -s "$dir/TEST-$class.xml" ] && command -v python3 >/dev/null; then
    python3 - "$dir/TEST-$class.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.find("failure") is None and case.find("error") is None:
        continue
    for tag in ("system-out", "system-err"):
        for e in case.iter(tag):
            text = (e.text or "").splitlines()
            if text:
                print("-------- %s of %s (last 400 lines)" % (tag, case.get("name")))
                print("\n".join(text[-400:]))
PY
  fi
  echo "======== end of $class"
done
