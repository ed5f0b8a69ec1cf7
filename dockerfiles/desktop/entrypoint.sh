#!/bin/sh
# Desktop sandbox entrypoint: the control server (root) owns the session, which runs as `agent`.
set -eu
if [ -z "${VAGEN_SANDBOX_TOKEN:-}" ]; then
  echo "VAGEN_SANDBOX_TOKEN is required (the control server refuses to run without a token)" >&2; exit 2
fi
# The healthcheck reads the token from a root-only file; the agent user cannot.
mkdir -p /run/vagen && umask 077 && printf '%s' "$VAGEN_SANDBOX_TOKEN" > /run/vagen/token && umask 022
num="${VAGEN_DISPLAY#:}"
# Stale after `docker restart` / commit: X locks and Chromium singletons (home is restored anyway).
rm -f "/tmp/.X${num}-lock" "/tmp/.X11-unix/X${num}"
set -- python3 -m sandboxes.server --session --user agent --display "$VAGEN_DISPLAY" --size "$VAGEN_SCREEN" \
  --host "$VAGEN_SANDBOX_HOST" --port "$VAGEN_SANDBOX_PORT" --home /home/agent \
  --home-template /opt/vagen/home-template --allow-remote "$@"
if [ -n "${VAGEN_VNC_PORT:-}" ]; then
  # Watch-only helpers, no password: they listen on $VAGEN_VNC_HOST (loopback by default).
  set -- "$@" --app "x11vnc -display $VAGEN_DISPLAY -noshm -forever -shared -nopw -listen ${VAGEN_VNC_HOST:-127.0.0.1} -rfbport $VAGEN_VNC_PORT -quiet"
  if [ -n "${VAGEN_NOVNC_PORT:-}" ]; then
    set -- "$@" --app "websockify --web /usr/share/novnc ${VAGEN_VNC_HOST:-127.0.0.1}:$VAGEN_NOVNC_PORT 127.0.0.1:$VAGEN_VNC_PORT"
  fi
fi
if [ -n "${VAGEN_DESKTOP_APPS:-}" ]; then
  set -- "$@" --app "$VAGEN_DESKTOP_APPS"
fi
exec "$@"
