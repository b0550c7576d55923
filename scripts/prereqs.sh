#!/usr/bin/env bash
# Checks (and, as root on Debian/Ubuntu, installs) what Paddock needs on this host.
#   scripts/prereqs.sh help    - for --help and --version: checks what building needs (JDK 17+, Maven, make, gcc;
#                                musl-gcc is optional) and installs nothing, even as root
#   scripts/prereqs.sh build   - to build: JDK 17+, Maven, make, a C compiler (musl-gcc preferred)
#   scripts/prereqs.sh run     - to run sandboxes: the above plus root and runc
#   scripts/prereqs.sh run runsc  - the same, and runsc (gVisor) for a command that asks for that tier;
#                                "runsc?" installs it where it can and goes on without it otherwise (a daemon)
#   scripts/prereqs.sh test    - to run the test suite: the above plus the tools the tests use (runsc included)
# Prints what is missing and how to get it; exits non-zero when something cannot be installed.
set -euo pipefail
mode=${1:-run}
shift || true

missing_pkgs=()
need() { # need COMMAND DEBIAN_PACKAGE
  command -v "$1" >/dev/null 2>&1 || missing_pkgs+=("$2")
}

need java openjdk-17-jdk-headless
need javac openjdk-17-jdk-headless
need mvn maven
need make make
need gcc gcc
# The Makefiles fall back to gcc -static without musl-gcc, so only the modes that install anything ask for it.
[[ $mode == help ]] || need musl-gcc musl-tools
if [[ $mode == run || $mode == test ]]; then
  need runc runc
  need mkfifo coreutils
  # Images: Debian bases are built with mmdebstrap; sandboxes of images write to a btrfs filesystem with
  # quotas. (Build steps get a sandbox network like any sandbox: the tools below.)
  need mmdebstrap mmdebstrap
  need mkfs.btrfs btrfs-progs
  # Sandbox networks: a namespace and veth per sandbox (iproute2), their policies as nftables rules.
  need ip iproute2
  need nft nftables
  need nsenter util-linux
fi
# Tiers a command asks for (runc is always needed): each Debian package of the same name. kubernetes has
# nothing to install here (a cluster and its kubeconfig; docs/KUBERNETES.md).
optional_pkgs=()
if [[ $mode == run ]]; then
  for tier in "$@"; do
    case $tier in
      runsc) need runsc runsc ;;
      'runsc?') command -v runsc >/dev/null 2>&1 || optional_pkgs+=(runsc) ;;
    esac
  done
fi
if [[ $mode == test ]]; then
  need python3 python3
  # UnprivilegedInitTest starts the init as a Kubernetes pod runs it (1000:1000, no capabilities) with setpriv.
  need setpriv util-linux
  # The gVisor tier's suites (RunscContractTest, RunscAttackTest) run on every CI build; none is skipped.
  need runsc runsc
  # node and npm: paddock-code's JavaScript tests, and E2bNodeTest (E2B's npm SDKs against the E2B listener)
  need node nodejs
  # paddock-code's tests: sandboxes share the host's /usr, so its Debian python3 needs matplotlib and pip
  need npm npm
  # Image tests: a real OCI registry, images made by tools we did not write, a tiny static userland.
  need docker-registry docker-registry
  need skopeo skopeo
  need umoci umoci
  need htpasswd apache2-utils
  # The dashboard's browser test (DashboardBrowserTest) and the ops acceptance: Debian's headless Chromium and its
  # chromedriver, driven by Selenium with the driver's path given, so nothing is downloaded.
  need chromium chromium
  need chromedriver chromium-driver
  # Network tests: their own DNS server, logging every query, in a namespace they make; a test CA for the
  # HTTPS host behind an egress secret.
  need dnsmasq dnsmasq-base
  need openssl openssl
  # The Debian package's test (scripts/test-deb.sh): lintian (unzip to read the jar), and systemd-analyze to
  # verify the unit, which needs no running systemd.
  need lintian lintian
  need unzip unzip
  need systemd-analyze systemd
  # Metrics tests: promtool (Debian's prometheus package) checks the daemon's /metrics.
  need promtool prometheus
  [[ -x /bin/busybox ]] && /bin/busybox --list 2>/dev/null | grep -qx sh && ldd /bin/busybox 2>&1 | grep -q 'not a dynamic' \
    || missing_pkgs+=(busybox-static)
  [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1 || missing_pkgs+=(python3-matplotlib)
  [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing_pkgs+=(python3-pip)
  # The Python SDK (python/): its dependencies and its tests come from Debian's packages, not PyPI.
  for m in httpx:python3-httpx websockets:python3-websockets pytest:python3-pytest venv:python3-venv; do
    [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c "import ${m%%:*}" >/dev/null 2>&1 || missing_pkgs+=("${m#*:}")
  done
fi

if ((${#missing_pkgs[@]})); then
  # shellcheck disable=SC2207
  pkgs=($(printf '%s\n' "${missing_pkgs[@]}" | sort -u))
  if [[ $mode != help ]] && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "paddock: installing ${pkgs[*]} (apt-get)…" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq "${pkgs[@]}" >/dev/null 2>&1; then
      apt-get update -qq >/dev/null 2>&1 || true
      apt-get install -y -qq "${pkgs[@]}" >&2 || {
        echo "paddock: could not install ${pkgs[*]}; install them and try again" >&2
        exit 1
      }
    fi
  else
    echo "paddock: missing: ${pkgs[*]}" >&2
    echo "paddock: install them, for example: sudo apt-get install -y ${pkgs[*]}" >&2
    exit 1
  fi
fi

if ((${#optional_pkgs[@]})) && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "paddock: installing ${optional_pkgs[*]} (apt-get), for the gVisor tier…" >&2
  export DEBIAN_FRONTEND=noninteractive
  # apt-get update only where apt has no package lists at all: a daemon that cannot get runsc (offline, say)
  # must not wait for the network at every start.
  apt-get install -y -qq "${optional_pkgs[@]}" >/dev/null 2>&1 \
    || { ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null && apt-get update -qq >/dev/null 2>&1 \
         && apt-get install -y -qq "${optional_pkgs[@]}" >/dev/null 2>&1; } \
    || echo "paddock: could not install ${optional_pkgs[*]}; the gVisor tier stays unavailable until" \
            "apt-get install -y ${optional_pkgs[*]} (as root) succeeds" >&2
fi

if [[ $mode == run || $mode == test ]] && [[ $(id -u) -ne 0 ]]; then
  echo "paddock: the local engine must run as root (each sandbox gets its own user namespace, host uid range," >&2
  echo "paddock: cgroups and mounts). Run it with sudo, as root, or use a Paddock daemon (paddock serve)." >&2
  exit 1
fi
