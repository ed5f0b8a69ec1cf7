#!/usr/bin/env bash
# Set up a fresh machine: Debian packages (as root; otherwise print the apt line) and a
# .venv with the package installed in editable mode plus its dev extra.
# Idempotent: re-running only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' -e '/^$/d' scripts/apt-packages.txt)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: not root; install these first:  sudo apt-get install -y ${missing[*]}" >&2
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.vagen-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing vagen[dev] into $VENV (first time: a few minutes, torch is large)"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -e ".[dev]"
  touch "$stamp"
fi
