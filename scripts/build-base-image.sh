#!/usr/bin/env bash
# Build a Debian base image without a registry: debootstrap -> docker import.
# Usage: scripts/build-base-image.sh [IMAGE_NAME] [SUITE]   (default vagen/debian:bookworm, bookworm)
# The mirror is the one apt already uses on this machine (or $DEBIAN_MIRROR). Needs root,
# debootstrap and a running Docker engine. Skips the work when the image already exists
# (set FORCE=1 to rebuild).
set -euo pipefail
IMAGE="${1:-vagen/debian:bookworm}"
SUITE="${2:-bookworm}"
if [ -z "${FORCE:-}" ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "base image $IMAGE exists"; exit 0
fi
MIRROR="${DEBIAN_MIRROR:-}"
if [ -z "$MIRROR" ]; then
  MIRROR=$(grep -hoE '^(URIs:|deb) *[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
           | grep -m1 -E 'debian/?$' | awk '{print $NF}' || true)
fi
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
ROOTFS=$(mktemp -d /tmp/vagen-rootfs.XXXXXX)
trap 'rm -rf "$ROOTFS"' EXIT
echo "debootstrap $SUITE from $MIRROR ..."
debootstrap --variant=minbase "$SUITE" "$ROOTFS" "$MIRROR" >/tmp/vagen-debootstrap.log 2>&1 \
  || { tail -30 /tmp/vagen-debootstrap.log >&2; exit 1; }
# The same mirror inside the image, plus security updates.
cat > "$ROOTFS/etc/apt/sources.list" <<SRC
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb ${MIRROR%/debian*}/debian-security $SUITE-security main
SRC
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
tar -C "$ROOTFS" -c . | docker import - "$IMAGE" >/dev/null
echo "imported $IMAGE"
