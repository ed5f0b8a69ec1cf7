# VAGEN desktop sandbox: Xvfb + openbox + xterm/tmux + mousepad + Chromium (CDP) +
# LibreOffice Calc/Writer + the control server from this repo, running as root while the
# desktop session and every command run as the unprivileged user `agent` (uid 1000).
#
#   docker build -f dockerfiles/desktop.Dockerfile -t vagen/desktop .          (from the repo root)
#   docker build --build-arg BASE_IMAGE=vagen/debian:bookworm ...              (no registry: scripts/build-base-image.sh)
#   docker build --build-arg WITH_OFFICE=0 ...                                 (~350 MB smaller, no LibreOffice)
#   Watch a sandbox: -e VAGEN_VNC_PORT=5900 (x11vnc) and -e VAGEN_NOVNC_PORT=6080 (noVNC in a browser:
#   http://127.0.0.1:6080/vnc.html); both bind $VAGEN_VNC_HOST (127.0.0.1) and have no password.
#
# Run (see dockerfiles/docker-compose.yml and sandboxes/providers/docker.py for the limits we use):
#   docker run -d --init --shm-size 1g -e VAGEN_SANDBOX_TOKEN=... -p 127.0.0.1:5000:5000 \
#     -e VAGEN_SANDBOX_HOST=0.0.0.0 vagen/desktop
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
ARG WITH_OFFICE=1
ARG WITH_VNC=1
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 LC_ALL=C.UTF-8

RUN apt-get update && apt-get upgrade -y && \
    apt-get install -y --no-install-recommends \
      xvfb openbox xterm tmux mousepad chromium python3 python3-pil python3-xlib python3-pyatspi at-spi2-core dbus-x11 \
      xdotool wmctrl x11-utils x11-xserver-utils ffmpeg scrot xdg-utils fonts-dejavu-core procps \
      ca-certificates curl \
      $( [ "$WITH_OFFICE" = 1 ] && echo libreoffice-calc libreoffice-writer libreoffice-gtk3 ) \
      $( [ "$WITH_VNC" = 1 ] && echo x11vnc novnc websockify ) && \
    apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb && \
    fc-cache -f >/dev/null
# ^ a stale system font cache made every fresh HOME rebuild its own: xterm took ~5 s to map.

RUN useradd --create-home --uid 1000 --shell /bin/bash agent && \
    mkdir -p /opt/vagen/home-template && cp -a /home/agent/. /opt/vagen/home-template/

COPY dockerfiles/desktop/ /opt/vagen/desktop/
COPY sandboxes/__init__.py /opt/vagen/sandboxes/__init__.py
COPY sandboxes/server/ /opt/vagen/sandboxes/server/
RUN install -m 0755 /opt/vagen/desktop/vagen-chromium /usr/local/bin/vagen-chromium && \
    ln -sf /usr/local/bin/vagen-chromium /usr/local/bin/google-chrome && \
    chmod 0755 /opt/vagen/desktop/entrypoint.sh && python3 -m compileall -q /opt/vagen/sandboxes

# Set by `vagen sandbox build` / the docker provider's build_image: the providers warn when an
# image runs control-server code that differs from the checkout's.
ARG SERVER_HASH=unknown
LABEL org.vagen.server-hash=${SERVER_HASH}
ENV PYTHONPATH=/opt/vagen VAGEN_SANDBOX_HOST=127.0.0.1 VAGEN_SANDBOX_PORT=5000 VAGEN_DISPLAY=:99 \
    VAGEN_SCREEN=1280x800 VAGEN_CDP_PORT=9222 VAGEN_VNC_PORT= VAGEN_NOVNC_PORT= VAGEN_VNC_HOST=127.0.0.1
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS -H "Authorization: Bearer $(cat /run/vagen/token)" "http://127.0.0.1:${VAGEN_SANDBOX_PORT}/health" || exit 1
ENTRYPOINT ["/opt/vagen/desktop/entrypoint.sh"]
