"""Sandboxed desktops and browsers: in-sandbox control server, providers, pool."""
