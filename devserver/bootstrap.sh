#!/usr/bin/env bash
# Creates .venv with Python 3.12 and installs the pinned dependencies; a second run with
# unchanged requirements does nothing. Extra parts, any of them: `sam` sets up the SAM CLI in
# .venv-sam; `bench` adds the benchmark group (requirements/bench.lock) to .venv; `node` installs
# the node clients the suite drives (tests/node, npm ci); `browser` installs Debian's Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.12 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
      command -v "$candidate"; return
    fi
  done
  local root
  root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
  for candidate in $(ls -d "$root"/versions/3.12*/bin/python3.12 2>/dev/null | sort -V -r); do
    "$candidate" -c 'import sys' 2>/dev/null && { echo "$candidate"; return; }
  done
  echo "error: Python 3.12 not found on PATH or under pyenv ($root/versions). Install it (pyenv install 3.12) or set PYTHON=/path/to/python3.12." >&2
  exit 1
}

make_venv() {  # [STAMP=name] make_venv DIR LOCKFILE...
  local dir=$1; shift
  local stamp="$dir/${STAMP:-.requirements}.sha256" wanted
  wanted=$(cat "$@" | sha256sum | cut -d' ' -f1)
  if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    return
  fi
  if [ ! -x "$dir/bin/python" ]; then
    "$(find_python)" -m venv "$dir"
  fi
  if [ ! -x .venv/bin/uv ]; then
    [ -x .venv/bin/python ] || "$(find_python)" -m venv .venv
    .venv/bin/python -m pip install --quiet --disable-pip-version-check uv==0.13.8
  fi
  local args=()
  for f in "$@"; do args+=(-r "$f"); done
  .venv/bin/uv pip install --quiet --python "$dir/bin/python" "${args[@]}"
  echo "$wanted" > "$stamp"
}

apt_install() {  # apt_install WHAT PACKAGE...: Debian packages, as root; else say what is missing
  local what=$1; shift
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "error: $what is missing. Install it as root: apt-get install -y $*" >&2
    exit 1
  fi
  echo "installing $what (apt-get install $*)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

node_clients() {  # tests/node: the AI SDK and playwright-core at the versions package-lock.json pins
  command -v npm >/dev/null 2>&1 || apt_install "Node.js and npm" nodejs npm
  local stamp=tests/node/node_modules/.package-lock.sha256 wanted
  wanted=$(sha256sum tests/node/package-lock.json | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    return
  fi
  npm ci --prefix tests/node --no-audit --no-fund --loglevel=error
  echo "$wanted" > "$stamp"
}

make_venv .venv requirements/dev.lock
for part in "$@"; do
  case "$part" in
    sam) make_venv .venv-sam requirements/sam.lock ;;
    # Its own stamp: installs on top of dev.lock, which it agrees with (bench.in is constrained by it).
    bench) STAMP=.bench-requirements make_venv .venv requirements/dev.lock requirements/bench.lock ;;
    node) node_clients ;;
    browser) command -v chromium >/dev/null 2>&1 || apt_install Chromium chromium ;;
    *) echo "error: unknown part '$part' (sam, bench, node, browser)" >&2; exit 2 ;;
  esac
done
