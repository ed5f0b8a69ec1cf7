#!/usr/bin/env bash
# Baseline leaderboard: scripted oracle/random/noop and the (untrained) tiny model on the five
# embodied VAGEN suites (sokoban/frozenlake at two step budgets), and oracle/no-op on osworld-lite
# (local sandboxes).
#   bash benchmarks/eval_baselines.sh [OUT]        (default runs/baselines; ~15 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/baselines}
V=.venv/bin/vagen
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
for suite in sokoban frozenlake; do
  for steps in 5 15; do
    for pol in scripted:oracle scripted:random; do
      $V eval $suite --policy $pol --seeds 0-49 --max-steps $steps --num-envs 2 --no-progress --no-screenshots \
        --out "$OUT/$suite-${pol#scripted:}-$steps" --resume > /dev/null
    done
    $V eval $suite --policy tiny --seeds 0-19 --max-steps $steps --temperature 1.0 --no-progress --no-screenshots \
      --out "$OUT/$suite-tiny-$steps" --resume > /dev/null
  done
done
# VAGEN's other three suites at the 15-step budget: navigation (5 splits) and primitive_skill (4 tasks)
# at seeds 0-9 of each split, svg at seeds 0-49; the tiny model on fewer seeds (it is slow on svg's
# long SVG answers).
for suite in navigation primitive_skill svg; do
  seeds=0-9; [ $suite = svg ] && seeds=0-49
  for pol in scripted:oracle scripted:random; do
    $V eval $suite --policy $pol --seeds $seeds --max-steps 15 --num-envs 2 --no-progress --no-screenshots \
      --out "$OUT/$suite-${pol#scripted:}-15" --resume > /dev/null
  done
  tiny_seeds=0-1; [ $suite = svg ] && tiny_seeds=0-9
  $V eval $suite --policy tiny --seeds $tiny_seeds --max-steps 15 --temperature 1.0 --no-progress --no-screenshots \
    --out "$OUT/$suite-tiny-15" --resume > /dev/null
done
for pol in scripted:oracle scripted:noop; do
  $V eval osworld --policy $pol --num-envs 2 --max-steps 15 --no-progress --out "$OUT/osworld-${pol#scripted:}-15" \
    --resume > /dev/null
done
$V leaderboard "$OUT"/*-* --out "$OUT/board"
