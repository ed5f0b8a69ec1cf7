#!/usr/bin/env bash
# Set up a fresh machine: Debian packages (as root; otherwise print the apt line) and a .venv
# that runs this checkout's code.
#
# The heavy part (torch, transformers, ... : ~7 GB) is a shared "base" venv under
# ~/.cache/vagen/venvs/<key>, keyed by a hash of pyproject.toml and the Python version, so every
# clone on this machine (fresh CI clones included) reuses it instead of building its own.
# The clone's .venv is a thin layer over it: its own interpreter, the base's site-packages on
# its path, this checkout installed in editable mode (no dependencies), and the base's console
# scripts (pytest, ruff, ...) re-pointed at the layer's interpreter. Creating the layer takes
# seconds; building a base takes a few minutes (once per dependency change). The two most
# recently used bases are kept, older ones are removed.
#
# Idempotent: re-running only redoes what changed. Env: PYTHON, VENV, VAGEN_VENV_CACHE.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
VENV_ABS=$(realpath -m "$VENV")
CACHE=${VAGEN_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vagen/venvs}
KEEP=2

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

# --- the shared base venv -------------------------------------------------------------------
pyver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
key=$( { echo "vagen-base-v1 $("$PYTHON" -c 'import sys; print(sys.version)')"; cat pyproject.toml; } \
       | sha256sum | cut -c1-16)
BASE="$CACHE/py$pyver-$key"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9   # one builder at a time; a second setup waits and then reuses what the first built
if [ ! -f "$BASE/.vagen-complete" ]; then
  echo "setup: building the shared dependency venv $BASE (first time for these dependencies: a few minutes, torch is large)"
  rm -rf "$BASE"
  "$PYTHON" -m venv "$BASE"
  # every dependency of the package and its dev extra, not the package itself
  mapfile -t reqs < <("$PYTHON" - <<'EOF'
import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(p["dependencies"] + p["optional-dependencies"]["dev"] + ["setuptools>=68", "wheel"]))
EOF
)
  "$BASE/bin/pip" install --quiet --disable-pip-version-check "${reqs[@]}"
  touch "$BASE/.vagen-complete"
fi
touch "$BASE"   # most recently used
# prune: keep the $KEEP most recently used bases
ls -1dt "$CACHE"/py*-* 2>/dev/null | tail -n +$((KEEP + 1)) | while read -r old; do
  [ "$old" = "$BASE" ] || { echo "setup: removing an older dependency venv $old"; rm -rf "$old"; }
done
flock -u 9

# --- this checkout's layer ------------------------------------------------------------------
site="$VENV/lib/python$pyver/site-packages"
marker="$VENV/.vagen-layer"
if [ -L "$VENV" ] || [ ! -f "$marker" ] || [ "$(cat "$marker")" != "$BASE $VENV_ABS" ]; then
  [ -e "$VENV" ] || [ -L "$VENV" ] && { echo "setup: replacing $VENV (it was built for another base or path)"; rm -rf "$VENV"; }
  "$PYTHON" -m venv --without-pip "$VENV"
  base_site="$BASE/lib/python$pyver/site-packages"
  echo "import site; site.addsitedir('$base_site')" > "$site/_vagen_base.pth"
  # the base's console scripts, re-pointed at this layer's interpreter (binaries are linked)
  for f in "$BASE"/bin/*; do
    name=$(basename "$f")
    case "$name" in python*|activate*|Activate*) continue ;; esac
    [ -e "$VENV/bin/$name" ] && continue
    if head -n1 "$f" | grep -q "^#!$BASE/bin/python"; then
      { echo "#!$VENV_ABS/bin/python"; tail -n +2 "$f"; } > "$VENV/bin/$name"
      chmod +x "$VENV/bin/$name"
    else
      ln -s "$f" "$VENV/bin/$name"
    fi
  done
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
  echo "$BASE $VENV_ABS" > "$marker"
  echo "setup: $VENV ready (layer over $BASE)"
fi
