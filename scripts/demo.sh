#!/usr/bin/env bash
# The main job on the embedded default: no GPU, no Docker, no downloads.
# Today that is the most complete real pipeline that exists: build the tiny Qwen2.5-VL
# offline, resolve the `vagen train osworld` config, write Sokoban solver demonstrations
# in the grounding+world-modeling format, serve the model behind the OpenAI-compatible
# API and answer a chat with an image through the openai backend.
# Its final target is `vagen train osworld` (tiny model, local sandbox, bundled tasks);
# this script switches to it when that command exists.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
VAGEN="$VENV/bin/vagen"
PY="$VENV/bin/python"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p .demo

"$VAGEN" --help > .demo/help.txt
if grep -qE '^\W+train\b' .demo/help.txt; then
  exec "$VAGEN" train osworld
fi

echo "== 1/5 tiny Qwen2.5-VL checkpoint (built offline once, cached)"
"$PY" -c "from vagen.models import tiny_model_path; print(tiny_model_path())"

echo "== 2/5 resolved config for 'vagen train osworld' (typed, validated)"
"$VAGEN" config show train/osworld trainer.steps=10

echo "== 3/5 envs and solver demonstrations (SFT data with true observation/prediction beliefs)"
"$VAGEN" envs
"$VAGEN" demos sokoban --n 20 --out .demo/demos --format grounding_worldmodeling --representation structured
"$PY" -c "
import json
s = json.loads(open('.demo/demos/samples.jsonl').readline())
print('first assistant turn:', s['messages'][2]['content'])
"

echo "== 4/5 vagen serve --model tiny on loopback"
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

echo "== 5/5 a chat with an image through the openai backend"
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
