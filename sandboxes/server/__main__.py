"""``python -m sandboxes.server``: run the control server (optionally owning a desktop session).

Prints one JSON line ``{"event": "ready", "url": ..., "display": ...}`` on stdout once it
accepts requests (``--port 0`` picks a free port; providers read the line). SIGTERM/SIGINT
stop the server and tear the owned session down (Xvfb, window manager, apps).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time

from .app import ControlServer, ServerConfig, is_loopback
from .desktop import Desktop, DesktopError, SessionSpec


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m sandboxes.server", description=__doc__.split("\n")[0])
    ap.add_argument("--host", default=os.environ.get("VAGEN_SANDBOX_HOST", "127.0.0.1"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("VAGEN_SANDBOX_PORT", "5000")))
    ap.add_argument("--token-file", help="read the bearer token from this file (else $VAGEN_SANDBOX_TOKEN)")
    ap.add_argument("--allow-remote", action="store_true",
                    help="allow binding a non-loopback address (the token is still required)")
    ap.add_argument("--display", default=os.environ.get("DISPLAY", ":99"))
    ap.add_argument("--session", action="store_true",
                    help="own the desktop session: start Xvfb + window manager + terminal; enables POST /reset")
    ap.add_argument("--no-xvfb", action="store_true", help="with --session, attach to an existing X server")
    ap.add_argument("--size", default="1280x800", help="screen WxH for the owned Xvfb")
    ap.add_argument("--user", help="run desktop apps and commands as this user (server must be root)")
    ap.add_argument("--home", help="desktop user's HOME (default: the user's home directory)")
    ap.add_argument("--home-template", help="copied into HOME at start and on every reset")
    ap.add_argument("--window-manager", default="openbox")
    ap.add_argument("--no-terminal", action="store_true")
    ap.add_argument("--app", action="append", default=[], help="shell command started in every session")
    ap.add_argument("--root", action="append", default=[],
                    help="allowed root for file routes (repeatable; default: HOME and /tmp)")
    ap.add_argument("--max-body-mb", type=float, default=64.0)
    ap.add_argument("--command-timeout", type=float, default=120.0)
    ap.add_argument("--max-command-timeout", type=float, default=600.0)
    ap.add_argument("--a11y-python", help="python with pyatspi for /accessibility (default: auto-detect)")
    ap.add_argument("--exit-with-parent", action="store_true",
                    help="shut down (and tear the session down) when the parent process dies")
    ap.add_argument("--log-level", default=os.environ.get("VAGEN_SANDBOX_LOG", "WARNING"))
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    token = os.environ.pop("VAGEN_SANDBOX_TOKEN", "")  # never inherited by desktop apps
    if args.token_file:
        with open(args.token_file) as f:
            token = f.read().strip()
    if not token:
        print("error: no token: set VAGEN_SANDBOX_TOKEN or pass --token-file", file=sys.stderr)
        return 2
    if not is_loopback(args.host) and not args.allow_remote:
        print(f"error: refusing to bind {args.host} (not loopback) without --allow-remote", file=sys.stderr)
        return 2
    w, _, h = args.size.partition("x")
    spec = SessionSpec(display=args.display, width=int(w), height=int(h), home=args.home,
                       home_template=args.home_template, user=args.user, window_manager=args.window_manager,
                       terminal=not args.no_terminal, apps=args.app, start_xvfb=args.session and not args.no_xvfb)
    try:
        desktop = Desktop(spec, own_session=args.session)
        if args.session:
            desktop.start()
    except (DesktopError, OSError, KeyError) as e:
        print(f"error: cannot start the desktop: {e}", file=sys.stderr)
        return 3
    config = ServerConfig(host=args.host, port=args.port, token=token, roots=args.root,
                          max_body=int(args.max_body_mb * 1024 * 1024), command_timeout=args.command_timeout,
                          max_command_timeout=args.max_command_timeout, a11y_python=args.a11y_python)
    try:
        server = ControlServer(config, desktop)
    except OSError as e:
        desktop.close()
        print(f"error: cannot bind {args.host}:{args.port}: {e}", file=sys.stderr)
        return 3

    def stop(signum, frame) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    if args.exit_with_parent:
        parent = os.getppid()

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            server.shutdown()

        threading.Thread(target=watch, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(json.dumps({"event": "ready", "url": server.url, "display": spec.display, "pid": os.getpid()}), flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
        desktop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
