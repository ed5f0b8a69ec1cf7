"""``vagen sandbox ...``: start, list, drive and stop sandboxes from a shell.

Sandboxes started by ``up`` keep running after the command returns (their records, with
the token, are in the state dir, mode 0600) until ``down``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from .client import SandboxError
from .providers import SandboxHandle, drop_record, load_records, make_provider

sandbox_app = typer.Typer(help="Sandboxed desktops and browsers: up, ls, screenshot, exec, down, build.",
                          no_args_is_help=True)
UP_PROVIDERS = ("local", "docker", "local-browser", "docker-browser")
console = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _find(sandbox_id: str) -> SandboxHandle:
    records = load_records()
    matches = [r for r in records if r.id == sandbox_id] or [r for r in records if r.id.startswith(sandbox_id)]
    if len(matches) != 1:
        known = ", ".join(r.id for r in records) or "none"
        _fail(f"{'no' if not matches else 'ambiguous'} sandbox {sandbox_id!r} (known: {known})")
    return matches[0]


def _desktop(h: SandboxHandle) -> SandboxHandle:
    if h.meta.get("kind") == "browser":
        _fail(f"{h.id} is a browser sandbox (CDP at {h.url}); screenshot/exec need a desktop")
    return h


@sandbox_app.command("up")
def up(
    provider: str = typer.Option("local", "--provider", "-p", help=f"One of {', '.join(UP_PROVIDERS)}."),
    n: int = typer.Option(1, "-n", min=1, max=64, help="How many sandboxes."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of {id, url, token, provider}."),
    image: str = typer.Option(None, help="Docker image (default vagen/desktop:latest or vagen/browser:latest)."),
    network: str = typer.Option("host", help="host or bridge (docker provider)."),
    size: str = typer.Option("1280x800", help="Screen size WxH."),
) -> None:
    """Start N sandboxes and leave them running until `vagen sandbox down`. Browser sandboxes
    print their CDP URL (no token: CDP listens on 127.0.0.1 only)."""
    if provider not in UP_PROVIDERS:
        _fail(f"--provider must be one of {', '.join(UP_PROVIDERS)}, got {provider!r}")
    window = size.replace("x", ",")
    try:
        if provider == "local":
            prov = make_provider("local", size=size, detach=True)
        elif provider == "docker":
            prov = make_provider("docker", image=image or "vagen/desktop:latest", network=network, screen=size,
                                 detach=True)
        elif provider == "local-browser":
            prov = make_provider("local-browser", window=window, detach=True)
        else:
            prov = make_provider("docker-browser", image=image or "vagen/browser:latest", window=window, detach=True)
        handles = prov.start(n)
    except (SandboxError, ValueError) as e:
        _fail(str(e), 1)
    if as_json:
        print(json.dumps([h.public() for h in handles]))
    else:
        for h in handles:
            print(f"{h.id}\t{h.url}\t{h.provider}")
        console.print(f"started {n}; tokens are in the state dir (or use --json). Stop: vagen sandbox down --all")


@sandbox_app.command("ls")
def ls(as_json: bool = typer.Option(False, "--json", help="JSON output.")) -> None:
    """List the sandboxes this machine started (and whether they answer)."""
    rows = []
    for h in load_records():
        if h.meta.get("kind") == "browser":
            from .providers.browser import cdp_version

            v = cdp_version(h.url)
            status = "ok" if v else "down"
        else:
            try:
                # generous: a live sandbox on a loaded machine must not be listed as down
                with h.client(timeout=15.0, retries=0) as c:
                    status = c.health(timeout=15.0).get("status", "?")
            except SandboxError as e:
                status = f"down ({type(e).__name__})"
        rows.append({"id": h.id, "url": h.url, "provider": h.provider, "status": status})
    if as_json:
        print(json.dumps(rows))
        return
    for r in rows:
        print(f"{r['id']}\t{r['url']}\t{r['provider']}\t{r['status']}")


@sandbox_app.command("screenshot")
def screenshot(sandbox_id: str = typer.Argument(..., help="Sandbox id (or a unique prefix)."),
               out: Path = typer.Argument(..., help="PNG file to write.")) -> None:
    """Save a screenshot of a sandbox."""
    h = _desktop(_find(sandbox_id))
    try:
        with h.client() as c:
            out.write_bytes(c.screenshot())
    except SandboxError as e:
        _fail(str(e), 1)
    console.print(f"wrote {out}")


@sandbox_app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec_(ctx: typer.Context, sandbox_id: str = typer.Argument(..., help="Sandbox id (or a unique prefix)."),
          timeout: float = typer.Option(120.0, help="Seconds before the command is killed.")) -> None:
    """Run a command in a sandbox as its desktop user: vagen sandbox exec ID -- CMD ARGS..."""
    argv = list(ctx.args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        _fail("no command given: vagen sandbox exec ID -- CMD ARGS...")
    h = _desktop(_find(sandbox_id))
    try:
        with h.client(timeout=timeout + 10) as c:
            res = c.execute(argv, timeout=timeout)
    except SandboxError as e:
        _fail(str(e), 1)
    sys.stdout.write(res.output)
    sys.stderr.write(res.error)
    raise typer.Exit(res.returncode if res.returncode is not None else 124)


@sandbox_app.command("down")
def down(sandbox_ids: list[str] = typer.Argument(None, help="Sandbox ids to stop."),
         all_: bool = typer.Option(False, "--all", help="Stop every sandbox this machine started.")) -> None:
    """Stop sandboxes (local processes or our labelled containers)."""
    if not sandbox_ids and not all_:
        _fail("give sandbox ids or --all")
    targets = load_records() if all_ else [_find(s) for s in sandbox_ids]
    stopped = []
    for h in targets:
        if h.provider == "local":
            from .providers.local import stop_local

            stop_local(h)
        elif h.provider == "local-browser":
            from .providers.browser import stop_local_browser

            stop_local_browser(h)
        elif h.provider in ("docker", "docker-browser"):
            from .providers.docker import remove_all

            try:
                remove_all({h.id})
            except SandboxError as e:
                console.print(f"[yellow]{h.id}: {escape(str(e))}[/]")
        drop_record(h.id)
        stopped.append(h.id)
    if all_:  # also containers with our label whose records (in this records folder) are gone
        try:
            from .providers.docker import remove_all

            stopped += remove_all(this_state_dir=True)
        except SandboxError:
            pass
    print(json.dumps({"stopped": stopped}))


@sandbox_app.command("build")
def build(kind: str = typer.Argument("desktop", help="desktop or browser."),
          base_image: str = typer.Option(None, help="BASE_IMAGE build arg (default: the Dockerfile's public one)."),
          tag: str = typer.Option(None, help="Image tag (default vagen/<kind>:latest)."),
          office: bool = typer.Option(True, help="Include LibreOffice (desktop).")) -> None:
    """Build a sandbox image from dockerfiles/ (no registry? scripts/build-base-image.sh, then --base-image)."""
    from .providers.docker import build_image

    try:
        built = build_image(kind, tag=tag, base_image=base_image, with_office=office,
                            log=lambda line: console.print(escape(line), highlight=False))
    except SandboxError as e:
        _fail(str(e), 1)
    print(built)
