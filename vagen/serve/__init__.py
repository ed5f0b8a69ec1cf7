"""`vagen serve`: an OpenAI-compatible chat-completions server over a policy."""

from vagen.serve.app import create_app

__all__ = ["create_app"]
