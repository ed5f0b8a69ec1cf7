"""The browser env base and MiniWoB++ on it (``envs.make("miniwob", task="click-button")``).

``WebEnv`` owns one :class:`envs.web.browser.Browser` (one Chromium for the env's life; a
fresh context per episode). A step parses the action string with the web grammar
(``envs.web.actions``; never ``exec``), runs each call through Playwright on the browser
thread, then asks the task whether it is done. Observation text: goal, URL, last action
error, and the page's element tree with bids; images: the screenshot (optionally with a
set-of-marks overlay). ``goto`` only reaches hosts in ``allow_hosts`` (``file://`` never).

The task tab: the tab ``reset`` opened is the one the task is scored on, whatever tab the
agent is looking at (``new_tab``/``tab_focus`` move the agent's view; the task tab cannot be
closed). The score is read from the task tab only while it still shows the task: MiniWoB's
episode document (a token the env puts into the page at reset; a reload or another page,
even another MiniWoB task, lacks it), a custom task's pages (its *scope*: URL prefixes,
by default the site folder or origin the task started on). Anything else scores 0 with the
reason in ``info["reason"]``.

Refusals: a ``goto`` to a URL the task does not allow, and ``tab_close`` of the task tab,
are refused and scored like an action outside the grammar (``action_valid=False``, the
``invalid_action_penalty``): the action is outside what the task permits, as an action name
outside ``allowed_actions`` is. An action that is allowed but fails on the page (a bid that
is not there, a value the input rejects) is the agent's mistake, reported back in
``Last action error`` with the action still valid in format. Every request the page makes
goes through the env's router: local sites are served, allowed hosts pass, anything else
is aborted and counted in ``blocked_requests``.

MiniWoB++ (Liu et al., 2018; pages from the PyPI ``miniwob`` package): the page is loaded
from ``file://``, seeded with ``Math.seedrandom(seed)``, started with
``core.startEpisodeReal()``; the goal is ``core.getUtterance()`` and the reward comes from
the page's own globals (``WOB_DONE_GLOBAL``, ``WOB_REWARD_GLOBAL`` — time-discounted —
and ``WOB_RAW_REWARD_GLOBAL``). Success = raw reward > 0; the env's reward is 1.0 on
success (binary), both page rewards are kept in ``info``.
"""

from __future__ import annotations

import io
import json
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from envs.base import EnvInfraError, PromptPieces, StateSchema, StepInfo, VagenEnv

from .browser import PAGE_SNAPSHOT_JS, Browser
from .tasks import default_scope, in_scope

OBSERVATIONS = ("screenshot", "axtree", "screenshot_axtree", "som")
MINIWOB_HOST = "miniwob.vagen.test"


# What an <input> of a type with a fixed value format takes (for the error when it rejects a fill).
_INPUT_FORMATS = {"date": "a date input takes YYYY-MM-DD", "time": "a time input takes HH:MM, 24-hour",
                  "datetime-local": "a datetime-local input takes YYYY-MM-DDTHH:MM", "month": "a month input takes "
                  "YYYY-MM", "week": "a week input takes YYYY-Www", "color": "a color input takes #rrggbb",
                  "number": "a number input takes a number", "range": "a range input takes a number in its range"}


def _call_text(call) -> str:
    """``click("12")``: the action and the element(s) it addressed, for error messages."""
    bids = [call.args[k] for k in ("bid", "from_bid", "to_bid") if k in call.args]
    return call.name + "(" + ", ".join(f'"{b}"' for b in bids) + ")"


def miniwob_dir() -> Path:
    import miniwob

    return Path(miniwob.__file__).parent / "html" / "miniwob"


def miniwob_tasks() -> list[str]:
    """Every MiniWoB++ task page shipped in the ``miniwob`` package."""
    return sorted(p.stem for p in miniwob_dir().glob("*.html"))


class RefusedAction(PermissionError):
    """An action the grammar accepts but the task does not permit (scored as invalid)."""


class WebEnv(VagenEnv):
    """Base: browser, observation, grammar, execution. Subclasses define the task."""

    state_schema: ClassVar[StateSchema] = StateSchema(entities=(), reference="page", coordinates="CSS pixels (x, y)")
    name = "web"
    #: Episodes need Chromium (the `desktop` test tier); the env launches it on first reset.
    needs_browser: ClassVar[bool] = True

    def __init__(self, observation: str = "screenshot_axtree", viewport: list[int] | tuple[int, int] = (500, 320),
                 max_steps: int = 10, max_actions_per_turn: int = 1, allowed_actions: list[str] | None = None,
                 allow_hosts: list[str] | None = None, cdp_url: str | None = None, axtree_max_nodes: int = 300,
                 invalid_action_penalty: float = 0.0, headless: bool = True, action_timeout_ms: int = 1500,
                 pool: Any = None, browser_executable: str | None = None, lean_browser: bool = True,
                 share_browser: bool = False) -> None:
        if observation not in OBSERVATIONS:
            raise ValueError(f"{self.name}: observation must be one of {', '.join(OBSERVATIONS)}, got {observation!r}")
        if invalid_action_penalty > 0:
            raise ValueError(f"{self.name}: invalid_action_penalty must be <= 0")
        self.observation_mode = observation
        self.viewport = (int(viewport[0]), int(viewport[1]))
        self.max_steps, self.max_actions = int(max_steps), int(max_actions_per_turn)
        self.allowed = frozenset(allowed_actions) if allowed_actions else None
        self.allow_hosts = list(allow_hosts or [])
        self.axtree_max_nodes = int(axtree_max_nodes)
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.action_timeout_ms = int(action_timeout_ms)
        self._browser_args = {"viewport": self.viewport, "headless": headless, "cdp_url": cdp_url,
                              "executable": browser_executable, "lean": lean_browser}
        if pool is not None and cdp_url:
            raise ValueError(f"{self.name}: give either pool (browser sandboxes) or cdp_url, not both")
        self.pool = pool  # a sandboxes.pool.SandboxPool of browser sandboxes (CDP URLs)
        if share_browser and (pool is not None or cdp_url):
            raise ValueError(f"{self.name}: share_browser applies to local browsers, not to pool/cdp_url")
        self.share_browser = bool(share_browser)  # one Chromium for every env of this process
        self.context = None
        self._lease = None
        #: host -> folder served at http://<host>/ by request routing (no server); see envs.web.tasks
        self.sites: dict[str, Path] = {}
        #: folders whose files the page may load over file:// (MiniWoB in file mode, file:// tasks)
        self.file_roots: list[Path] = []
        self.blocked_requests = 0
        self.browser: Browser | None = None
        self.page = None       # the tab the agent acts on
        self.task_page = None  # the tab the task is scored on (the one reset opened)
        self.goal = ""
        self.chat: list[dict[str, str]] = []
        self._steps = 0
        self._snap: dict[str, Any] = {}
        self._last_frame: np.ndarray | None = None
        self._tabs: list[tuple[str, bool, bool]] = []  # (url, is the task tab, is the agent's tab)
        self._set_spaces(None)

    # -- task hooks --------------------------------------------------------------------------
    def _start(self, page, seed: int | None, options: dict | None) -> str:
        raise NotImplementedError

    def _check(self, page) -> tuple[float, bool, dict[str, Any]]:
        raise NotImplementedError

    # -- contract ------------------------------------------------------------------------------
    def prompt_pieces(self) -> PromptPieces:
        from .actions import grammar_text

        return PromptPieces(
            description="You control a web browser page. Each observation gives the goal, the page's elements as "
                        "'[bid] role \"name\"' lines and (if shown) a screenshot; act on elements by their bid.",
            action_help=grammar_text(self.allowed), example_action='click("12")', max_actions_per_turn=self.max_actions,
            action_separator="")

    @classmethod
    def solve_state(cls, state: dict[str, Any]) -> list[str] | None:
        return list(state.get("oracle", [])) or None

    @classmethod
    def predict_state(cls, state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
        return dict(state)

    # -- episode -------------------------------------------------------------------------------
    def _ensure_browser(self) -> Browser:
        if self.browser is not None and self.browser.broken:
            self._let_go()  # kills a hung or crashed browser (a sandbox's: our connection to it)
            self._drop_lease(lost=True)
        if self.browser is None:
            self.context = None
            if self.share_browser:
                from .browser import acquire_shared

                self.browser = acquire_shared(**self._browser_args)
            elif self.pool is None:
                self.browser = Browser(**self._browser_args)
            else:  # a browser sandbox from the pool, kept for the env's life (one browser per env)
                self._lease = self.pool.lease()
                try:
                    self.browser = Browser(**{**self._browser_args, "cdp_url": self._lease.handle.url})
                except EnvInfraError:
                    self._drop_lease(lost=True)
                    raise
        return self.browser

    def _let_go(self) -> None:
        """Close our browser (or, shared, our context in it and our hold on it)."""
        b, self.browser = self.browser, None
        if b is None:
            return
        if self.share_browser:
            from .browser import release_shared

            if self.context is not None and not b.broken:
                try:
                    b.call(self.context.close, timeout=10)
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass
            release_shared(b)
        else:
            b.close()
        self.context = None

    def _drop_lease(self, lost: bool = False) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            if lost:
                lease.mark_lost()  # the pool replaces the sandbox instead of resetting it
            lease.release()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        b = self._ensure_browser()
        try:
            self.context, self.page = b.new_context(self.context, self.viewport)
            self.task_page = self.page
            b.call(lambda: self.context.route("**/*", self._route))
            self.goal = b.call(lambda: self._start(self.page, seed, options))
        except EnvInfraError:
            raise
        except Exception as e:  # a page that does not load is infrastructure, not the agent
            raise EnvInfraError(f"{self.name}: reset failed: {type(e).__name__}: {e}") from e
        self._steps, self.chat = 0, []
        obs = self._observe("")
        return obs, StepInfo(state=self._state()).as_dict()

    def step(self, action: str):
        from .actions import WebActionError, parse_web_actions

        if self.page is None:
            raise RuntimeError(f"{self.name}: step() before reset()")
        self._steps += 1
        info = StepInfo(state={})
        reward, error = 0.0, ""
        try:
            calls = parse_web_actions(str(action), max_calls=self.max_actions, allowed=self.allowed)
        except WebActionError as e:
            calls, error = [], f"Invalid action, nothing was executed: {e}"
            info.action_valid = False
        before = self._snap.get("lines")
        for call in calls:
            try:
                self.browser.call(lambda c=call: self._execute(c))
                info.executed_actions.append(f"{call.name}({call.args})")
            except EnvInfraError:
                raise
            except RefusedAction as e:  # outside what the task permits: nothing was done
                error = f"Action refused, nothing was executed: {e}"
                info.action_valid = False
                break
            except Exception as e:  # the action failed on the page: the agent's error, reported back
                error = f"{_call_text(call)} failed: {str(e).splitlines()[0][:300]}"
                break
        if not info.action_valid:
            info.penalty = self.invalid_action_penalty
            reward += self.invalid_action_penalty
        try:
            task_reward, done, extra = self.browser.call(lambda: self._score())
        except EnvInfraError:
            raise
        except Exception as e:
            raise EnvInfraError(f"{self.name}: reading the task state failed: {e}") from e
        reward += task_reward
        truncated = not done and self._steps >= self.max_steps
        obs = self._observe(error)
        info.action_effective = self._snap.get("lines") != before
        info.success = bool(extra.get("success", False))
        info.metrics.update({k: float(v) for k, v in extra.items() if isinstance(v, (int, float, bool))})
        info.feedback = error
        info.state = self._state()
        out = info.as_dict()
        out.update({k: v for k, v in extra.items() if k not in out})
        return obs, reward, bool(done), truncated, out

    def _score(self) -> tuple[float, bool, dict[str, Any]]:
        """The task's score, read from the task tab (browser thread)."""
        page = self.task_page
        if page is None or page.is_closed():  # the tab crashed (the agent cannot close it)
            return 0.0, True, {"success": False, "reason": "the task tab is gone"}
        return self._on_page(lambda: self._check(page), page)

    # -- execution -----------------------------------------------------------------------------
    def _loc(self, bid: str):
        return self.page.locator(f'[data-vagen-bid="{bid}"]')

    def _element(self, bid: str):
        """The locator of ``bid``, which must be on the page now (else a clear error at once,
        instead of Playwright waiting out its timeout)."""
        loc = self._loc(bid)
        if loc.count() == 0:
            raise LookupError(f'there is no element "{bid}" on the page; use a bid from the element list')
        return loc

    def _fill(self, bid: str, value: str) -> None:
        loc = self._element(bid)
        loc.fill(value, timeout=self.action_timeout_ms)
        got = loc.evaluate("(e) => (e instanceof HTMLInputElement || e instanceof HTMLTextAreaElement)"
                           " ? {value: e.value, type: e.type} : null")
        if got is None or got["value"] == value.replace("\r\n", "\n").replace("\r", "\n"):
            return
        hint = _INPUT_FORMATS.get(got["type"], "")
        raise ValueError(f"the {got['type']} input did not take {value!r}: its value is now {got['value']!r}"
                         + (f" ({hint})" if hint else ""))

    def _refuse_goto(self, url: str) -> RefusedAction:
        hosts = sorted(set(self.sites) | set(self.allow_hosts))
        allowed = f"this task's hosts are {', '.join(hosts)}" if hosts else "this task opens no other pages"
        u, shown = urllib.parse.urlparse(url), json.dumps(url[:200])
        if u.scheme not in ("http", "https"):
            what = (f"{u.scheme}{'://' if u.scheme == 'file' else ':'} URLs are" if u.scheme
                    else "a URL without http(s):// is")
            return RefusedAction(f"goto({shown}): {what} never opened here; {allowed}")
        return RefusedAction(f"goto({shown}): {u.hostname or '(no host)'} is not a host of this task; {allowed}")

    def _clamp(self, x: float, y: float) -> tuple[float, float]:
        return min(max(float(x), 0.0), self.viewport[0] - 1.0), min(max(float(y), 0.0), self.viewport[1] - 1.0)

    def _host_allowed(self, url: str) -> bool:
        """http(s) URLs whose host is a local site or in ``allow_hosts`` (an entry ``host``
        allows it and its subdomains on any port, ``host:port`` that port only); about:blank."""
        u = urllib.parse.urlparse(url)
        if u.scheme not in ("http", "https"):
            return url == "about:blank"
        host = (u.hostname or "").lower()
        if not host:
            return False
        if host in self.sites:
            return True
        try:
            port = u.port or (443 if u.scheme == "https" else 80)
        except ValueError:
            return False
        for entry in self.allow_hosts:
            h, _, p = entry.lower().rpartition(":") if entry.count(":") == 1 else (entry.lower(), "", "")
            if p:
                if host == h and str(port) == p:
                    return True
            elif host == h or host.endswith("." + h):
                return True
        return False

    def _route(self, route) -> None:
        """Every request of the episode's context: local sites are served from their folder,
        allowed hosts go through, anything else is refused (counted in ``blocked_requests``)."""
        url = route.request.url
        u = urllib.parse.urlparse(url)
        host = (u.hostname or "").lower()
        if u.scheme in ("http", "https") and host in self.sites:
            return self._serve(route, self.sites[host], urllib.parse.unquote(u.path))
        if u.scheme in ("data", "blob") or self._host_allowed(url) or (u.scheme == "file" and self._file_allowed(u)):
            return route.continue_()
        self.blocked_requests += 1
        return route.abort("blockedbyclient")

    def _file_allowed(self, u: urllib.parse.ParseResult) -> bool:
        if u.netloc not in ("", "localhost"):
            return False
        path = Path(urllib.request.url2pathname(u.path)).resolve()
        return any(path.is_relative_to(root) for root in self.file_roots)

    @staticmethod
    def _serve(route, root: Path, path: str) -> None:
        import mimetypes

        target = (root / path.lstrip("/")).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_relative_to(root.resolve()) or not target.is_file():
            return route.fulfill(status=404, content_type="text/plain", body="not found")
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if ctype.startswith("text/") or ctype in ("application/javascript", "application/json"):
            ctype += "; charset=utf-8"
        return route.fulfill(status=200, content_type=ctype, body=target.read_bytes())

    def _on_page(self, fn, page=None):
        """Run ``fn`` (reads of ``page``, default the agent's tab); if a navigation the last
        action started destroys the page's context meanwhile, wait for the new page to load
        and read again."""
        page = page or self.page
        for attempt in range(4):
            try:
                return fn()
            except Exception as e:  # noqa: BLE001 - only navigation races are retried
                msg = str(e)
                if attempt == 3 or not ("Execution context was destroyed" in msg or "navigat" in msg.lower()):
                    raise
                try:
                    page.wait_for_load_state("load", timeout=5000)
                except Exception:  # noqa: BLE001 - the retry reports the real error
                    pass

    def _execute(self, call) -> None:
        a, t, page = call.args, self.action_timeout_ms, self.page
        n = call.name
        if n in ("click", "dblclick"):
            el = self._element(a["bid"])
            fn = el.click if n == "click" else el.dblclick
            fn(button=a.get("button", "left"), modifiers=a.get("modifiers") or None, timeout=t)
        elif n == "hover":
            self._element(a["bid"]).hover(timeout=t)
        elif n == "fill":
            self._fill(a["bid"], a["value"])
        elif n == "select_option":
            self._element(a["bid"]).select_option(a["options"], timeout=t)
        elif n == "press":
            self._element(a["bid"]).press(a["key_comb"], timeout=t)
        elif n == "focus":
            self._element(a["bid"]).focus(timeout=t)
        elif n == "clear":
            self._element(a["bid"]).clear(timeout=t)
        elif n == "drag_and_drop":
            self._element(a["from_bid"]).drag_to(self._element(a["to_bid"]), timeout=t)
        elif n == "scroll":
            page.mouse.wheel(float(a["delta_x"]), float(a["delta_y"]))
        elif n in ("mouse_click", "mouse_dblclick"):
            x, y = self._clamp(a["x"], a["y"])
            page.mouse.click(x, y, button=a.get("button", "left"), click_count=2 if n == "mouse_dblclick" else 1)
        elif n == "mouse_move":
            page.mouse.move(*self._clamp(a["x"], a["y"]))
        elif n in ("mouse_down", "mouse_up"):
            page.mouse.move(*self._clamp(a["x"], a["y"]))
            (page.mouse.down if n == "mouse_down" else page.mouse.up)(button=a.get("button", "left"))
        elif n == "mouse_drag_and_drop":
            page.mouse.move(*self._clamp(a["from_x"], a["from_y"]))
            page.mouse.down()
            page.mouse.move(*self._clamp(a["to_x"], a["to_y"]), steps=5)
            page.mouse.up()
        elif n == "keyboard_type":
            page.keyboard.type(a["text"])
        elif n == "keyboard_press":
            page.keyboard.press(a["key"])
        elif n == "scroll_at":
            page.mouse.move(*self._clamp(a["x"], a["y"]))
            page.mouse.wheel(float(a["delta_x"]), float(a["delta_y"]))
        elif n == "goto":
            if not self._host_allowed(a["url"]):
                raise self._refuse_goto(a["url"])
            page.goto(a["url"], timeout=10_000)
        elif n == "go_back":
            page.go_back(timeout=t)
        elif n == "go_forward":
            page.go_forward(timeout=t)
        elif n == "new_tab":
            self.page = self.context.new_page()
        elif n == "tab_close":
            if self.page == self.task_page:
                raise RefusedAction("tab_close(): this is the task tab, which stays open (switch to another "
                                    "tab with tab_focus(index) to close that one)")
            self.page.close()
            self.page = self.task_page
        elif n == "tab_focus":
            pages = self.context.pages
            if not 0 <= a["index"] < len(pages):
                raise IndexError(f"no tab {a['index']} (there are {len(pages)})")
            self.page = pages[a["index"]]
            self.page.bring_to_front()
        elif n == "send_msg_to_user":
            self.chat.append({"role": "assistant", "message": a["text"]})
        elif n == "report_infeasible":
            self.chat.append({"role": "infeasible", "message": a["reason"]})
        elif n == "noop":
            page.wait_for_timeout(min(float(a.get("wait_ms", 1000)), 10_000))
        else:  # the grammar and this table must agree
            raise EnvInfraError(f"action {n!r} has no executor")

    # -- observation ---------------------------------------------------------------------------
    def _observe(self, error: str) -> dict[str, Any]:
        def grab():
            snap = self.page.evaluate(PAGE_SNAPSHOT_JS, self.axtree_max_nodes)
            png = self.page.screenshot(type="png") if self.observation_mode != "axtree" else None
            self._tabs = [(p.url, p == self.task_page, p == self.page) for p in self.context.pages]
            return snap, png

        snap, png = self.browser.call(lambda: self._on_page(grab))
        self._snap = snap
        lines = [f"Goal: {self.goal}", f"URL: {snap['url']}", f"Step {self._steps + 1} of at most {self.max_steps}."]
        if len(self._tabs) > 1:
            lines.insert(2, "Tabs: " + "; ".join(
                f"[{i}] {url}" + (" (task)" if task else "") + (" (current)" if current else "")
                for i, (url, task, current) in enumerate(self._tabs)))
        if error:
            lines.append(f"Last action error: {error}")
        images: tuple[np.ndarray, ...] = ()
        if png is not None:
            from PIL import Image, ImageDraw

            img = Image.open(io.BytesIO(png)).convert("RGB")
            if self.observation_mode == "som":
                draw = ImageDraw.Draw(img)
                for bid, (x, y, w, h, role) in snap["boxes"].items():
                    if role in ("generic", "list", "table", "row"):
                        continue
                    draw.rectangle([x, y, x + w, y + h], outline=(255, 0, 0))
                    draw.text((x + 1, y), bid, fill=(255, 0, 0))
            frame = np.asarray(img)
            self._last_frame = frame
            images = (frame,)
            lines.append("Screenshot: <image>")
        if self.observation_mode != "screenshot":
            tree = "\n".join(snap["lines"]) + ("\n... (truncated)" if snap.get("truncated") else "")
            lines.append("Page elements:\n" + (tree or "(empty page)"))
        return {"text": "\n".join(lines), "images": images}

    def _state(self) -> dict[str, Any]:
        return {"entities": {}, "goal": self.goal, "url": self._snap.get("url", ""), "step": self._steps}

    def render(self) -> np.ndarray:
        return self._last_frame if self._last_frame is not None else np.zeros((1, 1, 3), np.uint8)

    def close(self) -> None:
        if self.browser is not None:
            broken = self.browser.broken
            self._let_go()
            self._drop_lease(lost=broken)


class MiniWoBEnv(WebEnv):
    name = "miniwob"
    description = "MiniWoB++ web tasks (the miniwob package's pages) in Playwright-driven Chromium"

    def __init__(self, task: str = "click-button", tasks: list[str] | None = None,
                 episode_max_time_ms: int | None = None, data_mode: str = "train", oracle: bool = True,
                 serve: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("viewport", (500, 320))
        super().__init__(**kwargs)
        self.use_oracle = oracle
        # file: pages load from the package folder (a browser on this machine); route: the env
        # serves them at http://miniwob.vagen.test/ (needed by browsers elsewhere: a sandbox's).
        remote = self.pool is not None or bool(self._browser_args["cdp_url"])
        self.serve = serve or ("route" if remote else "file")
        if self.serve not in ("file", "route"):
            raise ValueError(f"miniwob: serve must be file or route, got {serve!r}")
        if self.serve == "route":
            self.sites = {MINIWOB_HOST: miniwob_dir().parent}
        else:
            self.file_roots = [miniwob_dir().parent.resolve()]
        self.task_pool = list(tasks or [])  # several tasks: reset(seed) picks tasks[seed % len]
        for t in self.task_pool:
            self._set_task(t)  # validates every name now
        self._set_task(self.task_pool[0] if self.task_pool else task)
        # The page's own limit is 10 s of wall time (rewards decay over it); a model thinking
        # for seconds per step would always time out, so by default the limit is lifted.
        self.episode_max_time_ms = int(episode_max_time_ms) if episode_max_time_ms else 10**9
        self.data_mode = data_mode
        self._plan: list[str] = []
        self._token = ""

    def _set_task(self, task: str) -> None:
        from .miniwob_oracles import ORACLES

        tasks = miniwob_tasks()
        if task not in tasks:
            import difflib

            hint = difflib.get_close_matches(task, tasks, n=3)
            raise ValueError(f"miniwob: unknown task {task!r}" + (f"; did you mean {', '.join(hint)}?" if hint else ""))
        self.task = task
        self.url = (miniwob_dir() / f"{task}.html").as_uri() if getattr(self, "serve", "file") == "file" \
            else f"http://{MINIWOB_HOST}/miniwob/{task}.html"
        self._oracle = ORACLES.get(task) if self.use_oracle else None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """``options={"task_id": name}`` switches the task (same browser), as `vagen eval miniwob` does."""
        if options and (options.get("task_id") or options.get("task")):
            self._set_task(options.get("task_id") or options["task"])
        elif self.task_pool:
            self._set_task(self.task_pool[(seed or 0) % len(self.task_pool)])
        return super().reset(seed=seed, options=options)

    def _start(self, page, seed: int | None, options: dict | None) -> str:
        page.goto(self.url, wait_until="load", timeout=15_000)
        # MiniWoB's own score panel (last reward, a running clock) is not part of the task: hidden, so
        # the element tree shows the task only and "the page changed" means the agent changed it.
        page.add_style_tag(content="#reward-display { display: none !important; }")
        page.evaluate("([seed, maxTime, mode]) => { Math.seedrandom(seed); core.EPISODE_MAX_TIME = maxTime;"
                      " if (core.setDataMode) core.setDataMode(mode); core.startEpisodeReal(); }",
                      [int(seed or 0), self.episode_max_time_ms, self.data_mode])
        # The episode's token: only this document (not a reload, not another task's page) is scored.
        self._token = uuid.uuid4().hex
        page.evaluate("(t) => { window.__vagenEpisode = t; }", self._token)
        deadline = time.monotonic() + 5
        while not page.evaluate("() => WOB_TASK_READY"):
            if time.monotonic() > deadline:
                raise EnvInfraError(f"miniwob {self.task}: the page never became ready")
            page.wait_for_timeout(20)
        utt = page.evaluate("() => core.getUtterance()")
        return utt["utterance"] if isinstance(utt, dict) else str(utt)

    def _check(self, page) -> tuple[float, bool, dict[str, Any]]:
        m = page.evaluate("(t) => (window.__vagenEpisode !== t || typeof WOB_DONE_GLOBAL === 'undefined') ? null"
                          " : {done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL,"
                          " reason: (typeof WOB_REWARD_REASON === 'undefined' ? null : WOB_REWARD_REASON)}",
                          self._token)
        if m is None:  # the task tab left the episode's page (goto, go_back, a reload): the episode is lost
            return 0.0, True, {"success": False, "page_reward": -1.0, "raw_reward": -1.0,
                               "reason": f"the task tab left the {self.task} episode's page (it is at "
                                         f"{page.url[:200]}); the episode is lost"}
        done = bool(m["done"])
        success = done and float(m["raw"] or 0) > 0
        extra = {"success": success, "page_reward": float(m["reward"] or 0), "raw_reward": float(m["raw"] or 0),
                 "reason": m.get("reason")}
        return (1.0 if success else 0.0), done, extra

    def _state(self) -> dict[str, Any]:
        state = {**super()._state(), "task": self.task}
        if self._oracle is not None and self.page is not None:
            if self._steps == 0:  # planned once per episode (bids are stable within it)
                from .miniwob_oracles import OracleError

                try:
                    self._plan = self.browser.call(lambda: self._oracle(self.page, self.goal))
                except OracleError:
                    self._plan = []
            state["oracle"] = list(self._plan[self._steps:])  # the scripted solution from here
        return state


class CustomWebEnv(WebEnv):
    """Custom web tasks (``envs.web.tasks``): a registered task by name, or a one-off task
    from ``start_url`` + ``goal`` + ``validator``. Local sites are served by request routing
    (``http://vagen.test/<site>/``); requests to other hosts than the sites and
    ``allow_hosts`` are refused. The oracle (``info["state"]["oracle"]``) is re-planned from
    the current page after every step."""

    name = "web"
    description = "custom web tasks (setup/validate registry, bundled local Acme shop) or start_url+goal+validator"

    def __init__(self, task: str | None = None, tasks: list[str] | None = None, start_url: str | None = None,
                 goal: str | None = None, validator: Any = None, oracle_actions: list[str] | None = None,
                 sites: dict[str, str] | None = None, oracle: bool = True, **kwargs: Any) -> None:
        from .tasks import SITE_HOST, SITES_DIR, UrlTask, WebTaskError, compile_validator, web_task

        kwargs.setdefault("viewport", (800, 600))
        kwargs.setdefault("max_steps", 15)
        super().__init__(**kwargs)
        self.use_oracle = oracle
        self.sites = {SITE_HOST: SITES_DIR}
        for host, folder in (sites or {}).items():
            if not isinstance(host, str) or not host or not all(c.isalnum() or c in ".-" for c in host):
                raise ValueError(f"web: sites: bad host name {host!r}")
            if not Path(folder).is_dir():
                raise ValueError(f"web: sites[{host!r}]: {folder!r} is not a folder")
            self.sites[host.lower()] = Path(folder)
        if start_url is not None:
            if task or tasks:
                raise ValueError("web: give either task/tasks (registered) or start_url+goal+validator, not both")
            if not isinstance(goal, str) or not goal.strip():
                raise ValueError("web: start_url needs a goal (the instruction text)")
            if validator is None:
                raise ValueError("web: start_url needs a validator (callable, 'module:function' or a spec dict)")
            u = urllib.parse.urlparse(start_url)
            if u.scheme not in ("http", "https", "file"):
                raise ValueError(f"web: start_url must be http(s):// or file://, got {start_url!r}")
            try:
                check = compile_validator(validator)
            except WebTaskError as e:
                raise ValueError(str(e)) from e
            if u.scheme == "file":  # the page's own folder, for its scripts and styles
                self.file_roots.append(Path(urllib.request.url2pathname(u.path)).resolve().parent)
            elif (u.hostname or "").lower() not in self.sites:
                self.allow_hosts.append(u.netloc.lower())  # the start site itself (its port only)
            self._task_classes = {"custom": None}
            self._make_task = lambda name, seed: UrlTask(seed, start_url, goal, check, oracle_actions)
        else:
            names = list(tasks or [task or "acme-login"])
            try:
                self._task_classes = {n: web_task(n) for n in names}
            except WebTaskError as e:
                raise ValueError(str(e)) from e
            for cls in self._task_classes.values():
                self.allow_hosts.extend(h for h in cls.allow_hosts if h not in self.allow_hosts)
            self._make_task = lambda name, seed: self._task_classes[name](seed)
        self.task_names = list(self._task_classes)  # the pool reset(seed) cycles through
        self.task_name = self.task_names[0]
        self.task = None
        self.scope: tuple[str, ...] = ()  # URL prefixes of the task's pages (set at reset)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """``options={"task_id": name}`` picks one of the env's tasks; otherwise
        ``tasks[seed % len(tasks)]``."""
        want = (options or {}).get("task_id") or (options or {}).get("task")
        if want:
            if want not in self._task_classes:
                if self._task_classes == {"custom": None}:
                    raise ValueError(f"web: task {want!r}: this env plays its start_url task only")
                from .tasks import WebTaskError, web_task

                try:
                    self._task_classes[want] = web_task(want)  # any registered task, as `vagen eval web` asks
                except WebTaskError as e:
                    raise ValueError(str(e)) from e
            self.task_name = want
        else:
            self.task_name = self.task_names[(seed or 0) % len(self.task_names)]
        return super().reset(seed=seed, options=options)

    def _start(self, page, seed: int | None, options: dict | None) -> str:
        self.blocked_requests = 0
        self.task = self._make_task(self.task_name, seed)
        goal = self.task.setup(page)
        if not isinstance(goal, str) or not goal.strip():
            raise EnvInfraError(f"web task {self.task_name}: setup returned no goal ({goal!r})")
        self.scope = tuple(self.task.scope) or (default_scope(page.url),)
        return goal

    def _check(self, page) -> tuple[float, bool, dict[str, Any]]:
        from .tasks import normalize_outcome

        page.wait_for_load_state("load", timeout=5000)  # a navigation the action started
        if not in_scope(page.url, self.scope):  # another site's page: whatever it shows is not this task's
            return 0.0, False, {"success": False, "blocked_requests": self.blocked_requests,
                                "reason": f"the task tab is at {page.url[:200]}, outside this task's pages "
                                          f"({', '.join(self.scope)}); not scored until it is back"}
        reward, done, info = normalize_outcome(self.task.validate(page, list(self.chat)))
        info.setdefault("blocked_requests", self.blocked_requests)
        return reward, done, info

    def _state(self) -> dict[str, Any]:
        state = {**super()._state(), "task": self.task_name}
        if self.use_oracle and self.task is not None and self.page is not None:
            from .miniwob_oracles import OracleError

            try:
                state["oracle"] = list(self.browser.call(lambda: self._on_page(lambda: self.task.oracle(self.page))))
            except OracleError:
                state["oracle"] = []
        return state
