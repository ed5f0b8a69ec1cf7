"""In-sandbox control server (OSWorld guest API + token, limits, structured input).

Standard library only (PIL for screenshots, pyatspi in a subprocess for accessibility),
so it runs from this folder on a bare image's ``python3``:
``python3 -m sandboxes.server --session --display :99 --token-file /run/token``.
"""

from .app import ROUTES, ControlServer, ServerConfig
from .desktop import ACTION_TYPES, ActionError, Desktop, DesktopError, SessionSpec, compile_actions

__all__ = ["ACTION_TYPES", "ROUTES", "ActionError", "ControlServer", "Desktop", "DesktopError", "ServerConfig",
           "SessionSpec", "compile_actions"]
