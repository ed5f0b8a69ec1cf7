# VAGEN browser sandbox: headless Chromium (Debian's chromium-headless-shell, the lean old
# headless mode) exposing the DevTools protocol (CDP), for the web env.
#
#   docker build -f dockerfiles/browser.Dockerfile -t vagen/browser .       (from the repo root)
#   docker run -d --init --shm-size 1g -p 127.0.0.1:9222:9222 -e VAGEN_CDP_HOST=0.0.0.0 vagen/browser
#
# CDP has no authentication of its own: publish it on 127.0.0.1 only (docker-compose.yml does),
# or use host networking with VAGEN_CDP_HOST=127.0.0.1 (the default). Runs as the unprivileged
# user `agent`; Chromium's own sandbox is off because the container is the sandbox.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 LC_ALL=C.UTF-8
RUN apt-get update && apt-get upgrade -y && \
    apt-get install -y --no-install-recommends chromium-headless-shell fonts-dejavu-core ca-certificates curl && \
    apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
RUN useradd --create-home --uid 1000 --shell /bin/bash agent
COPY dockerfiles/browser/entrypoint.sh /opt/vagen/browser/entrypoint.sh
RUN chmod 0755 /opt/vagen/browser/entrypoint.sh
USER agent
ENV VAGEN_CDP_HOST=127.0.0.1 VAGEN_CDP_PORT=9222 VAGEN_WINDOW=1280,800
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${VAGEN_CDP_PORT}/json/version" >/dev/null || exit 1
ENTRYPOINT ["/opt/vagen/browser/entrypoint.sh"]
