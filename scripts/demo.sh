#!/usr/bin/env bash
# The main job on the embedded default: no GPU, no Docker, no downloads.
# Today that is the most complete real pipeline that exists: build the tiny Qwen2.5-VL
# offline, resolve the `vagen train osworld` config, write solver demonstrations, SFT the
# tiny model on FrozenLake demos and run a few RL steps on it (`vagen train frozenlake
# preset=demo`), serve the model behind the OpenAI-compatible API and answer a chat with
# an image through the openai backend.
# Its final target is `vagen train osworld` (tiny model, local sandbox, bundled tasks);
# this script switches to it when that command exists.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
VAGEN="$VENV/bin/vagen"
PY="$VENV/bin/python"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p .demo

"$VAGEN" envs > .demo/envs.txt
if grep -q '^osworld' .demo/envs.txt; then
  exec "$VAGEN" train osworld
fi

echo "== 1/6 tiny Qwen2.5-VL checkpoint (built offline once, cached)"
"$PY" -c "from vagen.models import tiny_model_path; print(tiny_model_path())"

echo "== 2/6 resolved config for 'vagen train osworld' (typed, validated)"
"$VAGEN" config show train/osworld trainer.steps=10

echo "== 3/6 envs and solver demonstrations (SFT data with true observation/prediction beliefs)"
"$VAGEN" envs
"$VAGEN" demos sokoban --n 20 --out .demo/demos-sokoban --format grounding_worldmodeling --representation structured
"$PY" -c "
import json
s = json.loads(open('.demo/demos-sokoban/samples.jsonl').readline())
print('first assistant turn:', s['messages'][2]['content'])
"

echo "== 4/6 SFT warm start on FrozenLake demonstrations, then RL (GRPO) — a few CPU minutes"
"$VAGEN" demos frozenlake --n 300 --out .demo/demos-fl --format no_think --system-prompt minimal \
  observation=text max_actions_per_turn=1 max_turns=8
"$VAGEN" sft data=.demo/demos-fl prompt.history=none prompt.format=no_think steps=300 batch_size=32 \
  out_dir=.demo/sft model.device=cpu log_every=50
"$VAGEN" train frozenlake preset=demo model.path=.demo/sft/final trainer.out_dir=.demo/rl trainer.steps=5 \
  trainer.val_every=5 trainer.val_episodes=64 trainer.save_every=5 > .demo/train.log 2>&1 || { tail -30 .demo/train.log; exit 1; }
"$PY" -c "
import json
rows = [json.loads(l) for l in open('.demo/rl/metrics.jsonl')]
for r in rows:
    print('step', r['step'], 'success %.3f' % r['success'], 'return %.3f' % r['return'], 'loss %.4f' % r['loss'],
          'val greedy %s' % r.get('val/success_greedy', '-'))
print('plots:', sorted(p.name for p in __import__('pathlib').Path('.demo/rl/plots').glob('*.png')))
"

echo "== 5/6 vagen serve --model tiny on loopback"
port=$("$PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
"$VAGEN" serve --model tiny --host 127.0.0.1 --port "$port" > .demo/serve.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 $server 2>/dev/null || { cat .demo/serve.log; exit 1; }
  sleep 0.5
done
curl -fsS "http://127.0.0.1:$port/v1/models"; echo

echo "== 6/6 a chat with an image through the openai backend"
"$PY" - <<'PYEOF'
from PIL import Image, ImageDraw
img = Image.new("RGB", (160, 120), (240, 240, 240))
d = ImageDraw.Draw(img)
d.rectangle([20, 20, 70, 70], fill=(200, 40, 40))
d.ellipse([90, 50, 140, 100], fill=(40, 80, 200))
img.save(".demo/scene.png")
PYEOF
"$VAGEN" chat --model openai:tiny --base-url "http://127.0.0.1:$port/v1" --image .demo/scene.png \
  --max-tokens 24 --seed 0 --json "Describe the shapes." | "$PY" -c "
import json, sys
g = json.load(sys.stdin)
print('text          :', repr(g['text']))
print('tokens        :', len(g['token_ids']), 'ids, finish', g['finish_reason'])
print('mean logprob  :', round(sum(g['logprobs']) / len(g['logprobs']), 3))
print('policy version:', g['policy_version'])
"
echo "demo: done (a random tiny model writes gibberish; the pipeline around it is real)"
