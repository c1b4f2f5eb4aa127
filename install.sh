#!/usr/bin/env bash
# Set up benchfleet from a clone: git, redis-server, uv, a Python >= 3.11, and the dependency set
# pinned by uv.lock, in .venv. For macOS with only the Command Line Tools and for Debian/Ubuntu,
# root or not; docs/install.md says what each step does and why.
#   ./install.sh            the package with its coordinator and worker extras
#   ./install.sh --test     ... and the test tools
#   ./install.sh --dry-run  print each step it would take, change nothing
# Written for bash 3.2 (macOS): no associative arrays, no empty arrays under `set -u`.
set -euo pipefail
cd "$(dirname "$0")"

UV_VERSION=0.13.9 # fetched when no uv on PATH is at least pyproject's [tool.uv] required-version
UV_HOME=.uv       # where the fetched uv lives (gitignored)
MANAGED_PYTHON=3.12 # what `uv python install` brings when no Python 3.11+ is on PATH
# Looked for in this order: the system's own, then the one uv would install, then the others.
PYTHON_NAMES="python3 python3.12 python3.11 python3.13"
# pip for a python3 that has none (Debian and Ubuntu ship it apart): pinned, hash-checked.
PIP_WHEEL="pip-26.0.1-py3-none-any.whl"
PIP_URL=https://files.pythonhosted.org/packages/de/f0/c81e05b613866b76d2d1066490adf1a3dbc4ee9d9c839961c3fc8a6997af/$PIP_WHEEL
PIP_SHA256=bdb1b08f4274833d62c1aa29e20907365a2ceb950410df15fc9521bad440122b

extras=(--extra coordinator --extra worker)
test_mode=""
dry_run=""
for arg in "$@"; do
  case "$arg" in
    --test) test_mode=1; extras+=(--extra test) ;;
    --dry-run) dry_run=1 ;;
    *) echo "install.sh: unknown option $arg; use --test, --dry-run or neither" >&2; exit 2 ;;
  esac
done

say() { echo "install.sh: $*"; }
fail() { echo "install.sh: $*" >&2; exit 1; }
works() { "$@" >/dev/null 2>&1; }
# Every step that changes the machine goes through here, so --dry-run prints exactly what runs.
step() { say "$*"; [ -n "$dry_run" ] || "$@"; }

# "3.10 /usr/bin/python3.10": the version, and the interpreter behind a name (a pyenv shim, say).
py_facts() {
  "$1" -c 'import sys; print("%d.%d %s" % (sys.version_info[:2] + (sys.executable,)))' 2>/dev/null
}
suitable() { case "$1" in 3.11 | 3.12 | 3.13) return 0 ;; *) return 1 ;; esac; }
# The facts of the first Python on PATH the lock has wheels for.
find_python() {
  local name path facts
  for name in $PYTHON_NAMES; do
    path=$(command -v "$name") || continue
    facts=$(py_facts "$path") && suitable "${facts%% *}" && { echo "$facts"; return 0; }
  done
  return 1
}
# The facts of any Python that runs, old ones included: enough to fetch uv with.
any_python() {
  local name path facts
  for name in $PYTHON_NAMES; do
    path=$(command -v "$name") && facts=$(py_facts "$path") && { echo "$facts"; return 0; }
  done
  return 1
}

uv_version() { "$1" --version 2>/dev/null | sed -n 's/^uv \([0-9][0-9.]*\).*/\1/p'; }
at_least() { # is version $1 at least $2? (major.minor)
  local IFS=. got least
  read -r -a got <<<"$1"
  read -r -a least <<<"$2"
  ((got[0] > least[0] || (got[0] == least[0] && got[1] >= least[1])))
}
# A uv new enough for uv.lock: the user's own, or the one an earlier run fetched; prints its path.
find_uv() {
  local uv_min candidate version
  uv_min=$(sed -n 's/^required-version = ">=\([0-9.]*\)"$/\1/p' pyproject.toml)
  for candidate in "$(command -v uv || true)" "$UV_HOME/bin/uv"; do
    [ -n "$candidate" ] || continue
    version=$(uv_version "$candidate")
    [ -n "$version" ] && at_least "$version" "$uv_min" && { echo "$candidate"; return 0; }
  done
  return 1
}

# uv $UV_VERSION into $UV_HOME, with the pip of Python $1 (any version), or a fetched pip when it
# has none. `--target` keeps clear of the system's site-packages (and so of PEP 668's refusal).
fetch_uv() {
  local python=$1 pip
  export PIP_ROOT_USER_ACTION=ignore # its warning is about the system's packages: --target is not
  step rm -rf "$UV_HOME"
  if works "$python" -m pip --version; then
    pip=("$python" -m pip)
  else
    say "fetch $PIP_WHEEL from PyPI into $UV_HOME ($python has no pip), sha256-checked"
    [ -n "$dry_run" ] || fetch_pip_wheel "$python" "$UV_HOME/$PIP_WHEEL"
    pip=("$python" "$UV_HOME/$PIP_WHEEL/pip") # pip runs from its own wheel
  fi
  step "${pip[@]}" install --quiet --disable-pip-version-check --target "$UV_HOME" \
    "uv==$UV_VERSION" ||
    fail "could not install uv $UV_VERSION with $python's pip (its reason is above); check the" \
      "network or proxy, or install uv yourself (docs/install.md), then run ./install.sh again."
}

fetch_pip_wheel() {
  mkdir -p "$(dirname "$2")"
  "$1" - "$PIP_URL" "$PIP_SHA256" "$2" <<'EOF'
import hashlib, sys, urllib.request
url, sha256, dest = sys.argv[1:4]
try:
    data = urllib.request.urlopen(url, timeout=120).read()
except OSError as error:
    sys.exit("install.sh: could not download pip from PyPI (%s); check the network or proxy "
             "(https_proxy), or install uv yourself (docs/install.md)" % error)
if hashlib.sha256(data).hexdigest() != sha256:
    sys.exit("install.sh: the pip downloaded from %s does not match its pinned sha256" % url)
with open(dest, "wb") as out:
    out.write(data)
EOF
}

# --- What this host can do -------------------------------------------------------------------
os=$(uname -s)
uv=$(find_uv) || uv=""
need="" # missing and required: git always; redis-server for the tests; a python3 to fetch uv with
want="" # missing but optional: redis-server, which only the coordinator and the demo use
works git --version || need="$need git"
if ! works redis-server --version; then
  if [ -n "$test_mode" ]; then need="$need redis-server"; else want="$want redis-server"; fi
fi
[ -n "$uv" ] || any_python >/dev/null || need="$need python3"

# How missing packages can be added: apt-get as root (or through sudo), or Homebrew.
installer=""
if [ "$os" = Darwin ]; then
  works command -v brew && installer=brew
  no_installer="there is no Homebrew (https://brew.sh)"
elif works command -v apt-get; then
  if [ "$(id -u)" -eq 0 ]; then
    installer=apt
    as_root=(env DEBIAN_FRONTEND=noninteractive)
  elif works command -v sudo && { works sudo -n true || [ -t 0 ]; }; then
    installer=apt # sudo may ask for a password: only where there is a terminal to ask on
    as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
  fi
  no_installer="apt-get needs root, and there is no sudo to ask"
else
  no_installer="this system has neither apt-get nor Homebrew"
fi

# Debian and Homebrew name the packages differently.
brew_name() { case "$1" in redis-server) echo redis ;; *) echo "$1" ;; esac; }
# shellcheck disable=SC2086 # $1 and $formulae are lists of names
install_packages() {
  local name formulae=""
  case "$installer" in
    brew)
      for name in $1; do formulae="$formulae $(brew_name "$name")"; done
      step brew install $formulae
      ;;
    apt)
      step "${as_root[@]}" apt-get update -qq &&
        step "${as_root[@]}" apt-get install -y -qq $1
      ;;
  esac
}

present() { # is the package $1 there? (for the ones whose command is not their name)
  case "$1" in
    openssh-server) [ -x /usr/sbin/sshd ] ;;
    openssh-client) works command -v scp ;;
    *) works "$1" --version ;;
  esac
}

missing_after() { # which of $1 are still not there
  local name left=""
  for name in $1; do
    case "$name" in
      python3) [ -n "$dry_run" ] || any_python >/dev/null || left="$left $name" ;;
      *) [ -n "$dry_run" ] || present "$name" || left="$left $name" ;;
    esac
  done
  echo "$left"
}

# --test: real sshd servers for the lab-host tests (tests/hosts) and the SFTP benchmark.
if [ -n "$test_mode" ] && [ "$(uname -s)" != Darwin ]; then
  present openssh-server || need="$need openssh-server"
  present openssh-client || need="$need openssh-client"
  # The published site's test drives Debian's Chromium with Playwright (its own browser
  # download cannot reach the network here).
  present chromium || need="$need chromium"
  # The lease tests run a worker whose clock is a minute off (libfaketime's `faketime`).
  present faketime || need="$need faketime"
fi

# --- System packages ---------------------------------------------------------------------------
if [ -n "$need$want" ]; then
  if [ -n "$installer" ]; then
    install_packages "$need$want" || say "the package manager failed (above)"
    need=$(missing_after "$need")
    want=$(missing_after "$want")
    why="the package manager could not install them"
  else
    why=$no_installer
  fi
  [ -z "$need" ] ||
    fail "missing:$need, and $why; install them (docs/install.md), then run ./install.sh again."
fi

# --- uv, then Python, then the locked dependency set ------------------------------------------
if [ -z "$uv" ]; then
  facts=$(find_python || any_python || echo "? python3")
  fetch_uv "${facts#* }"
  uv=$UV_HOME/bin/uv
fi

if facts=$(find_python); then
  say "Python ${facts%% *}: ${facts#* }"
  python=${facts#* }
else
  found=$(any_python) && found="only Python ${found%% *} at ${found#* }" || found="no Python"
  say "no Python 3.11 to 3.13 on PATH ($found), so uv installs Python $MANAGED_PYTHON"
  step "$uv" python install --no-bin "$MANAGED_PYTHON" ||
    fail "uv could not install Python $MANAGED_PYTHON (its reason is above); put Python 3.11," \
      "3.12 or 3.13 on PATH, or see docs/install.md for a download mirror, then run" \
      "./install.sh again."
  python=$MANAGED_PYTHON
fi

# Bytecode is written now, once: these machines may set PYTHONDONTWRITEBYTECODE, and without it
# every process compiles every module it imports again (benchfleet --version took 7x longer).
step "$uv" sync --locked --compile-bytecode --python "$python" "${extras[@]}"
[ -n "$dry_run" ] || .venv/bin/python -m compileall -q -j 0 jobs runner workers deploy  # our own, too

if [ -n "$want" ]; then
  say "note: redis-server is not installed ($why): a worker does not need it; the coordinator" \
    "and \`benchfleet demo\` do (docs/install.md)."
fi
[ -n "$dry_run" ] || say "$(.venv/bin/benchfleet --version) is installed in .venv, with its bytecode"
