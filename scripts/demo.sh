#!/usr/bin/env bash
# The main job on the embedded default: `vagen train osworld` — the tiny Qwen2.5-VL (built
# offline), two local desktop sandboxes (Xvfb + openbox + xterm/mousepad/Chromium as local
# processes: no Docker, no GPU, no downloads) and the bundled osworld-lite tasks.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
VAGEN="$VENV/bin/vagen"
PY="$VENV/bin/python"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p .demo

echo "== 1/4 tiny Qwen2.5-VL checkpoint (built offline once, cached)"
"$PY" -c "from vagen.models import tiny_model_path; print(tiny_model_path())"

echo "== 2/4 the bundled OSWorld-format suite, and what this machine can run of it"
"$VAGEN" osworld check osworld-lite | tail -1

echo "== 3/4 one task played by its stored oracle through the env (score 1.0 expected)"
"$PY" - <<'PYEOF'
import envs
env = envs.make("osworld", task_ids=["os-write-hello"], sandbox={"provider": "local"})
try:
    obs, info = env.reset(seed=0)
    print("task:", obs["text"].splitlines()[0])
    for action in env.solve_state(info["state"]):
        obs, reward, done, truncated, info = env.step(action)
        print(f"  {action:60s} reward {reward:.1f}")
    print("success:", info["success"])
finally:
    env.close()
PYEOF

echo "== 4/4 vagen train osworld (RL steps on the tiny model; metrics, per-domain success, plots)"
"$VAGEN" train osworld trainer.out_dir=.demo/osworld > .demo/train-osworld.log 2>&1 \
  || { tail -30 .demo/train-osworld.log; exit 1; }
"$PY" -c "
import json, pathlib
for line in open('.demo/osworld/metrics.jsonl'):
    r = json.loads(line)
    dom = {k.split('/')[-1]: v for k, v in r.items() if k.startswith('episode/success/')}
    print('step', r['step'], 'success %.2f' % r['success'], 'valid actions %.2f' % r['rollout/valid_action_rate'],
          'env s %.1f' % r['time/env_s'], 'per-domain', dom)
print('plots:', sorted(p.name for p in pathlib.Path('.demo/osworld/plots').glob('*.png')))
"
echo "demo: done (a random tiny model does not solve desktop tasks; the pipeline around it is real)"
