#!/usr/bin/env bash
# Set up, then run every test tier but `gpu` (the README's test command, and what CI runs).
# Extra arguments go to pytest (e.g. -k hf, -m "not slow"). Under CI=true a desktop/docker
# test whose requirement is missing fails instead of skipping.
#
# Phases, each timed: setup (Debian packages, the .venv layer over the shared dependency venv),
# services (dockerd and the registry-free base image, as root), lint (ruff), pytest (on every
# core, up to 4 workers: VAGEN_TEST_WORKERS=N to choose, 0 for one process). The end of the
# output is a summary: each phase's time and status and, on failure, the phase that failed
# and each failing test id with its first error line.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

SUMMARY=()
FAILED_PHASE=""
t_all=$(date +%s)
report() {
  echo
  echo "==================================== test.sh summary ===================================="
  for line in "${SUMMARY[@]}"; do echo "  $line"; done
  echo "  total: $(( $(date +%s) - t_all )) s"
  if [ -n "$FAILED_PHASE" ]; then
    echo "FAILED in phase: $FAILED_PHASE"
    if [ -s "${VAGEN_TEST_FAILURES:-/nonexistent}" ]; then
      echo "failing tests ($(wc -l < "$VAGEN_TEST_FAILURES")), first error line each:"
      sed 's/^/  /' "$VAGEN_TEST_FAILURES"
    fi
  else
    echo "PASSED"
  fi
}
run_phase() {  # name command...: runs it, records its time; a failure ends the run
  local name=$1; shift
  local t0; t0=$(date +%s)
  echo "== phase: $name"
  "$@"
  local rc=$?
  SUMMARY+=("$(printf '%-9s %5d s  %s' "$name" $(( $(date +%s) - t0 )) "$([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")")")
  if [ $rc != 0 ]; then
    FAILED_PHASE=$name
    report
    exit $rc
  fi
}

run_phase setup bash scripts/setup.sh

# Services the docker tier needs: as root, start dockerd if none answers and build the
# registry-free base image once (a no-op when both exist). Elsewhere the tier skips (or, under
# CI=true, fails) with the reason.
services() {
  if [ "$(id -u)" = 0 ] && command -v dockerd >/dev/null; then
    bash scripts/start-dockerd.sh && bash scripts/build-base-image.sh vagen/debian:bookworm \
      || echo "test: docker services could not start; the docker tier will report it" >&2
  fi
  return 0
}
run_phase services services
run_phase lint "$VENV/bin/ruff" check vagen envs sandboxes worldgen tests benchmarks

workers=${VAGEN_TEST_WORKERS:-$(n=$(nproc); echo $(( n > 4 ? 4 : n )))}
xdist=()
if [ "$workers" -gt 1 ]; then
  # Groups go out longest first (tests/conftest.py orders them by tests/group_weights.json);
  # xdist's own reordering (by test count) would start a long one-test group last.
  xdist=(-n "$workers" --dist loadgroup --no-loadscope-reorder)
  # One compute thread per process: workers (and the CLIs they start) already fill the cores, and
  # OpenMP threads spinning against each other made torch-heavy tests ~25 % slower (measured).
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
fi
TMPROOT=$(mktemp -d /tmp/vagen-test.XXXXXX)
export VAGEN_TEST_FAILURES="$TMPROOT/failures.txt"
pytest_phase() {
  "$VENV/bin/python" -m pytest -m "not gpu" "${xdist[@]}" --basetemp "$TMPROOT/pytest" --durations=25 "$@"
  local rc=$?
  if [ $rc -eq 5 ]; then echo "test: no tests were collected for this selection"; rc=0; fi
  return $rc
}
cleanup() {
  # What a run leaves behind: its temporary files, and image layers that a rebuild replaced.
  [ -n "${VAGEN_KEEP_TEST_TMP:-}" ] || rm -rf "$TMPROOT"
  if [ "$(id -u)" = 0 ] && docker info >/dev/null 2>&1; then docker image prune -f >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
run_phase pytest pytest_phase "$@"
report
