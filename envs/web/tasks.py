"""Custom web tasks: ``setup(page) -> goal`` and ``validate(page, chat) -> (reward, done, info)``.

A task is a :class:`WebTask` subclass registered by name (``@register_web_task``); the
``web`` env (``envs.make("web", task="acme-login")``) makes a fresh instance per episode
(``seed`` and a seeded ``rng`` are set, so parameters drawn in ``setup`` are reproducible
and can be kept on ``self`` for ``validate``). Both hooks run on the browser thread with
the episode's Playwright page.

    @register_web_task("my-task")
    class MyTask(WebTask):
        start_url = site_url("acme", "index.html")
        def setup(self, page):
            page.goto(self.start_url)
            self.item = self.rng.choice(["a", "b"])
            return f"Open item {self.item}"
        def validate(self, page, chat):
            ok = page.url.endswith(f"/{self.item}.html")
            return (1.0, True, {"success": True}) if ok else (0.0, False, {})

Functions work too: ``register_web_task("x", setup=fn, validate=fn)``. Without a
registry, ``envs.make("web", start_url=..., goal=..., validator=...)`` builds a one-off
task: ``validator`` is a callable ``(page, chat) -> bool | float | (reward, done, info)``, an
import path ``"package.module:function"``, or a declarative spec (usable from YAML)::

    {"url_matches": "regex"}                 the page URL matches (re.search)
    {"element_text": {"selector": "#msg", "contains" | "equals" | "matches": "..."}}
    {"element_value": {"selector": "#q", "equals": "..."}}
    {"chat_contains": "text"}                a send_msg_to_user message contains it (case-insensitive)
    {"infeasible": true}                     the agent called report_infeasible
    {"js": "() => ..."}                      a page function the task author wrote returns truthy
    {"all": [spec, ...]} / {"any": [spec, ...]}

Scope: ``validate`` runs only while the task tab (the tab the episode started in) is on
one of the task's pages, the URL prefixes in ``scope`` (by default the folder of a bundled
site, ``http://vagen.test/acme/``, or the origin the task started on); on any other page the
step scores 0 with the reason in ``info``, so a page elsewhere that happens to satisfy the
validator is never credited.

Local sites: pages under ``envs/web/sites/<site>/`` are served at
``http://vagen.test/<site>/...`` by the env itself (Playwright request routing, no server
and no port; ``.test`` never resolves, RFC 2606), so bundled tasks need no network. Extra
hosts map to folders with the env's ``sites={"myapp.test": "/path/to/pages"}``.
"""

from __future__ import annotations

import importlib
import json
import random
import re
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

SITE_HOST = "vagen.test"
SITES_DIR = Path(__file__).parent / "sites"

Outcome = tuple[float, bool, dict[str, Any]]


def site_url(site: str, path: str = "index.html") -> str:
    """URL of a bundled page, e.g. ``site_url("acme", "shop.html")``."""
    return f"http://{SITE_HOST}/{site}/{path}"


class WebTaskError(ValueError):
    """A task definition or validator spec is wrong (the task author's error, raised at make/reset)."""


class WebTask:
    """One episode of a custom web task. Subclasses set the class attributes and override
    :meth:`setup` and :meth:`validate` (and optionally :meth:`oracle`)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: Hosts (``host`` or ``host:port``) the agent may ``goto`` and the page may load from,
    #: besides the local sites.
    allow_hosts: ClassVar[tuple[str, ...]] = ()
    #: URL prefixes of the task's own pages: ``validate`` only runs while the task tab is on
    #: one of them (elsewhere the step scores 0, "outside this task's pages"). Empty: the
    #: folder or origin of the page ``setup`` left the tab on (:func:`default_scope`).
    scope: ClassVar[tuple[str, ...]] = ()

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.rng = random.Random(seed)

    def setup(self, page) -> str:
        """Bring the page to the task's start state; return the goal text."""
        raise NotImplementedError

    def validate(self, page, chat: list[dict[str, str]]) -> Outcome:
        """After every step: ``(reward, done, info)``; ``info["success"]`` marks success."""
        raise NotImplementedError

    def oracle(self, page) -> list[str]:
        """The scripted next actions from the current page (bids are assigned); [] if none."""
        return []


WEB_TASKS: dict[str, type[WebTask]] = {}


def register_web_task(name: str, setup: Callable | None = None, validate: Callable | None = None,
                      description: str = "", allow_hosts: tuple[str, ...] = (), oracle: Callable | None = None):
    """Register a :class:`WebTask` subclass (decorator form) or a pair of functions
    ``setup(page, rng) -> goal`` and ``validate(page, chat) -> outcome``."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
        raise WebTaskError(f"web task name {name!r}: letters, digits, '_', '.', '-' only")

    def add(cls: type[WebTask]) -> type[WebTask]:
        if not (isinstance(cls, type) and issubclass(cls, WebTask)):
            raise WebTaskError(f"web task {name!r}: register a WebTask subclass")
        cls.name = name
        WEB_TASKS[name] = cls
        return cls

    if setup is None and validate is None:
        return add
    if setup is None or validate is None:
        raise WebTaskError(f"web task {name!r}: give both setup and validate")
    fn_setup, fn_validate, fn_oracle = setup, validate, oracle

    class FunctionTask(WebTask):
        def setup(self, page) -> str:
            return fn_setup(page, self.rng)

        def validate(self, page, chat):
            return normalize_outcome(fn_validate(page, chat))

        def oracle(self, page):
            return list(fn_oracle(page)) if fn_oracle else []

    FunctionTask.description, FunctionTask.allow_hosts = description, tuple(allow_hosts)
    FunctionTask.__name__ = FunctionTask.__qualname__ = f"FunctionTask[{name}]"
    return add(FunctionTask)


def web_task(name: str) -> type[WebTask]:
    _load_bundled()
    if name not in WEB_TASKS:
        import difflib

        hint = difflib.get_close_matches(name, list(WEB_TASKS), n=3)
        raise WebTaskError(f"web: unknown task {name!r}" + (f"; did you mean {', '.join(hint)}?" if hint else "")
                           + f" (registered: {', '.join(sorted(WEB_TASKS))})")
    return WEB_TASKS[name]


def list_web_tasks() -> dict[str, str]:
    _load_bundled()
    return {n: c.description for n, c in sorted(WEB_TASKS.items())}


def _load_bundled() -> None:
    from . import acme  # noqa: F401 - registers the bundled tasks


# -- where a task is scored ---------------------------------------------------------------------

def default_scope(url: str) -> str:
    """The URL prefix of a task that started at ``url``: a bundled site's folder
    (``http://vagen.test/acme/``: the sites share the host), otherwise the origin
    (``https://app.example:8443/``); for ``file://`` the file's folder; anything else
    (``about:blank``) itself."""
    u = urllib.parse.urlsplit(url)
    if u.scheme in ("http", "https") and u.netloc:
        first = u.path.lstrip("/").split("/", 1)
        folder = f"{first[0]}/" if (u.hostname or "").lower() == SITE_HOST and len(first) == 2 else ""
        return f"{u.scheme}://{u.netloc.lower()}/{folder}"
    if u.scheme == "file":
        return url.split("?", 1)[0].split("#", 1)[0].rsplit("/", 1)[0] + "/"
    return url


def in_scope(url: str, scope: tuple[str, ...]) -> bool:
    return any(url == p or (p.endswith("/") and url.startswith(p)) for p in scope)


# -- outcomes and declarative validators ---------------------------------------------------

def normalize_outcome(value: Any) -> Outcome:
    """``bool`` -> success ends the episode; a number -> that reward, done when > 0; or a
    ``(reward, done, info)`` tuple. ``info["success"]`` defaults to done and reward > 0."""
    if isinstance(value, bool):
        return (1.0, True, {"success": True}) if value else (0.0, False, {"success": False})
    if isinstance(value, (int, float)):
        r = float(value)
        return r, r > 0, {"success": r > 0}
    if isinstance(value, (tuple, list)) and len(value) == 3:
        reward, done, info = value
        info = dict(info or {})
        info.setdefault("success", bool(done) and float(reward) > 0)
        return float(reward), bool(done), info
    raise WebTaskError(f"a validator returned {type(value).__name__} {value!r}; expected bool, a number "
                       "or (reward, done, info)")


_SPEC_KEYS = ("url_matches", "element_text", "element_value", "chat_contains", "infeasible", "js", "all", "any")


def _text_check(where: str, spec: dict[str, Any]) -> Callable[[str], bool]:
    ops = [k for k in ("contains", "equals", "matches") if k in spec]
    if len(ops) != 1 or not isinstance(spec[ops[0]], str):
        raise WebTaskError(f"validator {where}: give exactly one of contains/equals/matches (a string)")
    op, want = ops[0], spec[ops[0]]
    if op == "matches":
        try:
            rx = re.compile(want)
        except re.error as e:
            raise WebTaskError(f"validator {where}.matches: bad regex {want!r}: {e}") from e
        return lambda s: rx.search(s) is not None
    if op == "equals":
        return lambda s: s.strip() == want
    return lambda s: want in s


def compile_validator(spec: Any) -> Callable[[Any, list[dict[str, str]]], Outcome]:
    """A validator from a callable, a ``"module:function"`` path or a declarative dict."""
    if callable(spec):
        return lambda page, chat: normalize_outcome(spec(page, chat))
    if isinstance(spec, str):
        module, _, attr = spec.partition(":")
        if not module or not attr:
            raise WebTaskError(f"validator {spec!r}: use 'package.module:function' or a dict spec")
        try:
            fn = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise WebTaskError(f"validator {spec!r}: cannot import: {e}") from e
        return compile_validator(fn)
    if not isinstance(spec, dict) or len(spec) != 1:
        raise WebTaskError(f"validator spec must be a dict with one of {', '.join(_SPEC_KEYS)}, got {spec!r}")
    check = _predicate(spec)
    return lambda page, chat: normalize_outcome(bool(check(page, chat)))


def _predicate(spec: dict[str, Any]) -> Callable[[Any, list[dict[str, str]]], bool]:
    if not isinstance(spec, dict) or len(spec) != 1:
        raise WebTaskError(f"validator spec must be a dict with one key, got {spec!r}")
    (key, arg), = spec.items()
    if key == "url_matches":
        if not isinstance(arg, str):
            raise WebTaskError("validator url_matches: give a regex string")
        rx = re.compile(arg)
        return lambda page, chat: rx.search(page.url) is not None
    if key in ("element_text", "element_value"):
        if not isinstance(arg, dict) or not isinstance(arg.get("selector"), str):
            raise WebTaskError(f"validator {key}: give {{selector: css, contains|equals|matches: text}}")
        test, sel = _text_check(key, arg), arg["selector"]
        js = ("(s) => { const e = document.querySelector(s); return e === null ? null : "
              + ("(e.innerText || e.textContent || '')" if key == "element_text" else "String(e.value ?? '')") + "; }")
        return lambda page, chat: (lambda v: v is not None and test(v))(page.evaluate(js, sel))
    if key == "chat_contains":
        if not isinstance(arg, str) or not arg:
            raise WebTaskError("validator chat_contains: give a non-empty string")
        low = arg.lower()
        return lambda page, chat: any(m["role"] == "assistant" and low in m["message"].lower() for m in chat)
    if key == "infeasible":
        want = bool(arg)
        return lambda page, chat: any(m["role"] == "infeasible" for m in chat) == want
    if key == "js":
        if not isinstance(arg, str):
            raise WebTaskError("validator js: give the source of a page function, e.g. \"() => window.done\"")
        return lambda page, chat: bool(page.evaluate(arg))
    if key in ("all", "any"):
        if not isinstance(arg, list) or not arg:
            raise WebTaskError(f"validator {key}: give a non-empty list of specs")
        parts = [_predicate(s) for s in arg]
        agg = all if key == "all" else any
        return lambda page, chat: agg(p(page, chat) for p in parts)
    raise WebTaskError(f"validator: unknown key {key!r}; allowed: {', '.join(_SPEC_KEYS)}")


class UrlTask(WebTask):
    """The one-off task behind ``envs.make("web", start_url=..., goal=..., validator=...)``."""

    name = "custom"

    def __init__(self, seed: int | None, start_url: str, goal: str, validator: Callable,
                 oracle: list[str] | None = None) -> None:
        super().__init__(seed)
        self.start_url, self.goal, self._validate, self._oracle = start_url, goal, validator, list(oracle or [])

    def setup(self, page) -> str:
        page.goto(self.start_url, wait_until="load", timeout=15_000)
        return self.goal

    def validate(self, page, chat):
        return self._validate(page, chat)

    def oracle(self, page):
        return list(self._oracle)


def describe_spec(spec: Any) -> str:
    """Short text for logs/run records (callables by qualified name)."""
    if callable(spec):
        return f"{getattr(spec, '__module__', '?')}:{getattr(spec, '__qualname__', repr(spec))}"
    return json.dumps(spec, sort_keys=True) if not isinstance(spec, str) else spec


__all__ = ["SITE_HOST", "SITES_DIR", "UrlTask", "WEB_TASKS", "WebTask", "WebTaskError", "compile_validator",
           "default_scope", "describe_spec", "in_scope", "list_web_tasks", "normalize_outcome", "register_web_task", "site_url", "web_task"]
