#!/usr/bin/env bash
# Creates .venv with Python 3.12 and installs the pinned dependencies; a second run with
# unchanged requirements does nothing. `bootstrap.sh sam` also sets up the SAM CLI in .venv-sam;
# `bootstrap.sh bench` adds the benchmark group (requirements/bench.lock) to .venv.
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

make_venv .venv requirements/dev.lock
if [ "${1:-}" = "sam" ]; then
  make_venv .venv-sam requirements/sam.lock
fi
if [ "${1:-}" = "bench" ]; then
  # Its own stamp: installs on top of dev.lock, which it agrees with (bench.in is constrained by it).
  STAMP=.bench-requirements make_venv .venv requirements/dev.lock requirements/bench.lock
fi
