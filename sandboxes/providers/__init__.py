"""Sandbox providers: ``local`` (Xvfb + WM + server as local processes), ``docker``
(containers from ``dockerfiles/``), ``remote`` (URLs of sandboxes started elsewhere)."""

from __future__ import annotations

from .base import Provider, SandboxHandle, drop_record, load_records, save_record, state_dir

PROVIDERS = ("local", "docker", "remote")


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
    raise ValueError(f"unknown sandbox provider {name!r}; allowed: {', '.join(PROVIDERS)}")


__all__ = ["PROVIDERS", "Provider", "SandboxHandle", "drop_record", "load_records", "make_provider", "save_record",
           "state_dir"]
