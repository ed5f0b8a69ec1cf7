#!/usr/bin/env bash
# `make ci`: exactly what CI does, before you submit. Clones HEAD (committed work only) into a
# temporary folder with a copy of ../shared beside it, runs `CI=true bash .ci/run` there with no
# stdin, keeps the log in .ci/last-log and writes .ci/last-run: `<HEAD commit> <exit code>
# <seconds>`. The temporary clone is removed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
head=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "ci: uncommitted changes are NOT part of this run: it tests HEAD $head" >&2
fi
work=$(mktemp -d /tmp/vagen-ci.XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone -q --no-local "$ROOT" "$work/main" && git -C "$work/main" checkout -q "$head" || exit 1
[ -d "$ROOT/../shared" ] && cp -a "$ROOT/../shared" "$work/shared"
mkdir -p "$ROOT/.ci"
echo "ci: HEAD $head in $work/main (log: .ci/last-log)"
t0=$(date +%s)
# The seconds each test group took (for refreshing tests/group_weights.json) land in .ci/group-times.json.
(cd "$work/main" && CI=true VAGEN_TEST_GROUP_TIMES="$ROOT/.ci/group-times.json" bash .ci/run </dev/null) 2>&1 | tee "$ROOT/.ci/last-log"
rc=${PIPESTATUS[0]}
secs=$(( $(date +%s) - t0 ))
echo "$head $rc $secs" > "$ROOT/.ci/last-run"
echo "ci: exit $rc after $secs s (HEAD $head); wrote .ci/last-run"
exit "$rc"
