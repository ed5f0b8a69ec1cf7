#!/bin/sh
# Headless Chromium with CDP; a fresh profile per container start (no state survives a restart).
set -eu
profile=$(mktemp -d /tmp/chromium-profile.XXXXXX)
exec /usr/bin/chromium-headless-shell --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
  --disable-dev-shm-usage --disable-background-networking --disable-component-update --disable-sync \
  --disable-quic --password-store=basic --user-data-dir="$profile" --window-size="$VAGEN_WINDOW" \
  --no-zygote --in-process-gpu --disable-gpu-compositing --disable-software-rasterizer \
  --js-flags=--max-semi-space-size=1 \
  --disable-features=Translate,MediaRouter,OptimizationHints,BackForwardCache,SpareRendererForSitePerProcess \
  --remote-debugging-address="$VAGEN_CDP_HOST" --remote-debugging-port="$VAGEN_CDP_PORT" "$@" about:blank
