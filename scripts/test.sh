#!/usr/bin/env bash
# Run every test tier but `gpu`. Extra arguments go to pytest (e.g. -k hf, -m "not slow").
# Under CI=true a desktop/docker test whose requirement is missing fails instead of skipping.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Services the docker tier needs: as root, start dockerd if none answers and build the
# registry-free base image once (a no-op when both exist). Elsewhere the tier skips (or, under
# CI=true, fails) with the reason.
if [ "$(id -u)" = 0 ] && command -v dockerd >/dev/null; then
  bash scripts/start-dockerd.sh && bash scripts/build-base-image.sh vagen/debian:bookworm \
    || echo "test: docker services could not start; the docker tier will report it" >&2
fi
"$VENV/bin/ruff" check vagen envs sandboxes worldgen tests benchmarks || exit 1
"$VENV/bin/python" -m pytest -m "not gpu" "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "test: no tests were collected for this selection"
  rc=0
fi
exit $rc
