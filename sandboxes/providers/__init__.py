"""Sandbox providers. Desktops: ``local`` (Xvfb + WM + server as local processes),
``docker`` (containers from ``dockerfiles/``), ``remote`` (URLs of sandboxes started
elsewhere). Browsers (CDP endpoints for the web env, ``providers/browser.py``):
``local-browser``, ``docker-browser``, ``remote-browser``."""

from __future__ import annotations

from .base import Provider, SandboxHandle, drop_record, load_records, save_record, state_dir

PROVIDERS = ("local", "docker", "remote", "local-browser", "docker-browser", "remote-browser")


def make_provider(name: str, **kwargs) -> Provider:
    if name == "local":
        from .local import LocalProvider

        return LocalProvider(**kwargs)
    if name == "docker":
        from .docker import DockerProvider

        return DockerProvider(**kwargs)
    if name == "remote":
        from .remote import RemoteProvider

        return RemoteProvider(**kwargs)
    if name in ("local-browser", "docker-browser", "remote-browser"):
        from . import browser

        cls = {"local-browser": browser.LocalBrowserProvider, "docker-browser": browser.DockerBrowserProvider,
               "remote-browser": browser.RemoteBrowserProvider}[name]
        return cls(**kwargs)
    raise ValueError(f"unknown sandbox provider {name!r}; allowed: {', '.join(PROVIDERS)}")


def provider_from_config(cfg) -> Provider:
    """A provider from a `sandbox:` config section (any object with its attributes, e.g.
    `vagen.config.SandboxConfig`). The remote token comes from the `token_env` variable."""
    import os

    size = f"{cfg.screen_width}x{cfg.screen_height}"
    if getattr(cfg, "kind", "desktop") == "browser":
        window = f"{cfg.screen_width},{cfg.screen_height}"
        if cfg.provider == "local":
            return make_provider("local-browser", window=window)
        if cfg.provider == "docker":
            from .browser import BROWSER_IMAGE

            image = BROWSER_IMAGE if cfg.image == "vagen/desktop:latest" else cfg.image
            return make_provider("docker-browser", image=image, window=window, mem_limit=cfg.mem_limit, cpus=cfg.cpus)
        return make_provider("remote-browser", urls=list(cfg.urls))
    if cfg.provider == "local":
        return make_provider("local", size=size)
    if cfg.provider == "docker":
        return make_provider("docker", image=cfg.image, network=cfg.network, reset_mode=cfg.reset_mode,
                             screen=size, mem_limit=cfg.mem_limit, cpus=cfg.cpus)
    token = os.environ.get(cfg.token_env, "")
    if not token:
        raise ValueError(f"sandbox.provider=remote needs the token in ${cfg.token_env}")
    return make_provider("remote", urls=list(cfg.urls), token=token)


__all__ = ["PROVIDERS", "Provider", "provider_from_config", "SandboxHandle", "drop_record", "load_records", "make_provider", "save_record",
           "state_dir"]
