#!/usr/bin/env bash
# Set up benchfleet on a fresh Debian/Ubuntu or macOS machine: git, Python >= 3.11 with venv,
# redis-server, and the package in .venv. `./install.sh --test` adds the test tools.
set -euo pipefail
cd "$(dirname "$0")"
extras="[coordinator,worker]"
[ "${1:-}" = "--test" ] && extras="[coordinator,worker,test]"
missing() { ! command -v "$1" >/dev/null 2>&1; }

if [ "$(uname)" = Darwin ]; then
  missing brew && { echo "install.sh: install Homebrew first, then run ./install.sh again"; exit 1; }
  missing redis-server && brew install redis
  missing git && brew install git
  missing python3 && brew install python@3.12
else
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  packages=""
  missing redis-server && packages="$packages redis-server"
  missing git && packages="$packages git"
  missing python3 && packages="$packages python3"
  python3 -c "import ensurepip, venv" 2>/dev/null || packages="$packages python3-venv"
  # --test: real sshd servers for the lab-host tests (tests/hosts) and the SFTP benchmark.
  if [ "${1:-}" = "--test" ]; then
    [ -x /usr/sbin/sshd ] || packages="$packages openssh-server"
    if missing scp; then packages="$packages openssh-client"; fi
  fi
  if [ -n "$packages" ]; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $packages
  fi
fi

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "install.sh: benchfleet needs Python 3.11 or newer (found $(python3 -V))"; exit 1; }
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".$extras"
echo "install.sh: benchfleet is installed in .venv ($(.venv/bin/benchfleet --help >/dev/null && echo ok))"
