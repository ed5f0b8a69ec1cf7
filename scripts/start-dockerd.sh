#!/usr/bin/env bash
# Start a Docker engine if none answers (CI and fresh machines): no bridge, no iptables,
# so containers get loopback only unless they use host networking (see MACHINE.md).
# Idempotent; needs root. Logs to /tmp/dockerd.log.
set -euo pipefail
if docker info >/dev/null 2>&1; then echo "dockerd: already running"; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "dockerd: not running and not root; start it yourself" >&2; exit 1; fi
command -v dockerd >/dev/null || { echo "dockerd missing: apt-get install docker.io" >&2; exit 1; }
nohup dockerd --bridge=none --iptables=false >/tmp/dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then echo "dockerd: started"; exit 0; fi
  sleep 0.5
done
echo "dockerd did not come up; tail of /tmp/dockerd.log:" >&2; tail -20 /tmp/dockerd.log >&2; exit 1
