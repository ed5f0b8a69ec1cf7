"""`desktop` tier: a web episode is scored on the task it was reset with, never on another
page the agent reached (MiniWoB in both serving modes, custom tasks on their own pages);
tabs, refusals and element errors behave as the env's docstring says; hostile actions
never execute anything or send a request outside the allowed origins."""

from __future__ import annotations

import re
import urllib.parse

import numpy as np
import pytest

import envs
from envs.web.env import MINIWOB_HOST, MiniWoBEnv, miniwob_dir

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(900)]

SERVES = ("file", "route")


def bid(text: str, pattern: str) -> str:
    """The bid of the first element line matching ``pattern`` (a regex over the line after the bid)."""
    for line in text.splitlines():
        m = re.match(r"\s*\[([^\]]+)\] (.*)", line)
        if m and re.search(pattern, m.group(2)):
            return m.group(1)
    raise AssertionError(f"no element matching {pattern!r} in\n{text}")


def task_url(env: MiniWoBEnv, task: str) -> str:
    return ((miniwob_dir() / f"{task}.html").as_uri() if env.serve == "file"
            else f"http://{MINIWOB_HOST}/miniwob/{task}.html")


def solve_enter_date(env: MiniWoBEnv, obs: dict) -> tuple:
    """Type the goal's date into the date input (YYYY-MM-DD, what a date input takes) and submit."""
    month, day, year = re.search(r"(\d\d)/(\d\d)/(\d{4})", env.goal).groups()
    _, r, done, _, info = env.step(f'fill("{bid(obs["text"], r"^textbox")}", "{year}-{month}-{day}")')
    assert not info["feedback"], info["feedback"]
    return env.step(f'click("{bid(obs["text"], "^button .Submit")}")')


@pytest.mark.parametrize("serve", SERVES)
def test_another_miniwob_page_solved_is_never_credited(serve):
    e = MiniWoBEnv(task="enter-date", observation="axtree", serve=serve)
    try:
        # The reproduction: the task tab goes to click-test and solves it.
        e.reset(seed=0)
        obs, r, done, _, info = e.step(f'goto("{task_url(e, "click-test")}")')
        if serve == "file":  # file:// is never opened: refused, the episode goes on
            assert (r, done, info["action_valid"]) == (0.0, False, False)
            assert "file:// URLs are never opened here" in info["feedback"]
        else:  # the task tab left the episode's page: lost at once, whatever it shows next
            assert (r, done, info["success"]) == (0.0, True, False)
            assert "left the enter-date episode's page" in info["reason"] and info["state"]["task"] == "enter-date"
        # Reloading the task's own page would draw a new instance: also not the episode.
        if serve == "route":
            e.reset(seed=0)
            _, r, done, _, info = e.step(f'goto("{task_url(e, "enter-date")}")')
            assert (r, done, info["success"]) == (0.0, True, False) and "left" in info["reason"]

        # Another task solved in a second tab scores nothing; the task tab is still the one scored.
        obs, _ = e.reset(seed=0)
        obs, r, done, _, info = e.step("new_tab()")
        assert (r, done) == (0.0, False) and "Tabs: [0] " in obs["text"] and "(task)" in obs["text"]
        if serve == "route":
            obs, r, done, _, info = e.step(f'goto("{task_url(e, "click-test")}")')
            obs, r, done, _, info = e.step(f'click("{bid(obs["text"], "^generic .START")}")')
            obs, r, done, _, info = e.step(f'click("{bid(obs["text"], "^button .Click Me")}")')
            assert (r, done, info["success"]) == (0.0, False, False)  # click-test is done in tab 1, not credited
        obs, r, done, _, info = e.step("tab_focus(0)")
        assert (r, done) == (0.0, False) and "(task) (current)" in obs["text"]
        _, r, done, _, info = solve_enter_date(e, obs)
        assert (r, done, info["success"]) == (1.0, True, True)
    finally:
        e.close()


def test_a_custom_task_is_scored_on_its_own_pages_only(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "index.html").write_text("<html><body><button onclick=\"document.getElementById('msg').textContent="
                                  "'Order placed'\">Place order</button><p id='msg'></p></body></html>")
    (b / "index.html").write_text("<html><body><p id='msg'>Order placed</p></body></html>")
    e = envs.make("web", start_url="http://shop.test/index.html", goal="Place the order.",
                  validator={"element_text": {"selector": "#msg", "contains": "Order placed"}},
                  sites={"shop.test": str(a), "other.test": str(b)}, observation="axtree")
    try:
        obs, _ = e.reset(seed=0)
        assert e.scope == ("http://shop.test/",)
        _, r, done, _, info = e.step('goto("http://other.test/index.html")')  # says "Order placed" already
        assert (r, done, info["success"]) == (0.0, False, False)
        assert "outside this task's pages (http://shop.test/)" in info["reason"]
        # A second tab on the other site does not count either; the task tab does.
        obs, _ = e.reset(seed=0)
        e.step("new_tab()")
        _, r, done, _, info = e.step('goto("http://other.test/index.html")')
        assert (r, done) == (0.0, False) and not info.get("reason")
        obs, *_ = e.step("tab_focus(0)")
        _, r, done, _, info = e.step(f'click("{bid(obs["text"], "^button")}")')
        assert (r, done, info["success"]) == (1.0, True, True)
    finally:
        e.close()


def test_bundled_tasks_are_scoped_to_their_site_and_survive_a_new_tab():
    from envs.web.tasks import default_scope, in_scope

    assert default_scope("http://vagen.test/acme/shop.html?q=x") == "http://vagen.test/acme/"
    assert default_scope("https://App.example:8443/a/b") == "https://app.example:8443/"
    assert default_scope("file:///srv/task/index.html") == "file:///srv/task/"
    assert default_scope("about:blank") == "about:blank"
    assert in_scope("http://vagen.test/acme/cart.html", ("http://vagen.test/acme/",))
    assert not in_scope("http://vagen.test/acmeX/cart.html", ("http://vagen.test/acme/",))
    assert not in_scope("http://vagen.test.evil/acme/", ("http://vagen.test/acme/",))
    e = envs.make("web", task="acme-find-product", observation="axtree")
    try:
        _, info = e.reset(seed=0)
        assert e.scope == ("http://vagen.test/acme/",)
        obs, r, done, _, info = e.step("new_tab()")  # an about:blank tab: not an error, not the end
        assert (r, done, info["feedback"]) == (0.0, False, "")
        obs, r, done, _, info = e.step("tab_focus(0)")
        for _ in range(8):
            _, r, done, _, info = e.step(info["state"]["oracle"][0])
            if done:
                break
        assert (r, done, info["success"]) == (1.0, True, True)
    finally:
        e.close()


def test_tabs_refusals_and_element_errors_read_as_sentences():
    e = MiniWoBEnv(task="enter-date", observation="axtree", serve="route", invalid_action_penalty=-0.1)
    try:
        obs, _ = e.reset(seed=0)
        _, r, done, _, info = e.step("tab_close()")  # the task tab stays
        assert (r, info["action_valid"]) == (-0.1, False)
        assert info["feedback"].startswith("Action refused, nothing was executed: tab_close(): this is the task tab")
        _, r, _, _, info = e.step('goto("https://example.com/")')
        assert (r, info["action_valid"]) == (-0.1, False)
        assert info["feedback"] == ('Action refused, nothing was executed: goto("https://example.com/"): example.com '
                                    f"is not a host of this task; this task's hosts are {MINIWOB_HOST}")
        # An element that is not there: named, reported at once (no Playwright timeout), valid in format.
        _, r, _, _, info = e.step('click("4711")')
        assert (r, info["action_valid"]) == (0.0, True)
        assert info["feedback"] == ('click("4711") failed: there is no element "4711" on the page; use a bid '
                                    "from the element list")
        # A value the date input rejects is reported; the right format is taken.
        box = bid(obs["text"], "^textbox")
        _, _, _, _, info = e.step(f'fill("{box}", "05/20/2010")')
        assert info["feedback"] == (f"fill(\"{box}\") failed: the date input did not take '05/20/2010': its value "
                                    "is now '' (a date input takes YYYY-MM-DD)")
        obs, _, _, _, info = e.step(f'fill("{box}", "2010-05-20")')
        assert info["feedback"] == "" and 'value="2010-05-20"' in obs["text"]
        # new_tab / tab_close of another tab, then back on the task tab.
        e.step("new_tab()")
        obs, _, done, _, info = e.step("tab_close()")
        assert info["feedback"] == "" and not done and "Tabs:" not in obs["text"]
        assert obs["text"].splitlines()[1] == f"URL: {task_url(e, 'enter-date')}"
    finally:
        e.close()
    e = MiniWoBEnv(task="enter-date", observation="axtree")
    try:
        e.reset(seed=0)
        _, _, _, _, info = e.step('goto("https://example.com/")')
        assert info["feedback"].endswith("example.com is not a host of this task; this task opens no other pages")
        _, _, _, _, info = e.step("click('a\x00')")
        assert info["feedback"] == ("Invalid action, nothing was executed: the action contains a null character "
                                    "(\\x00); write plain text")
    finally:
        e.close()


def test_tree_items_show_open_and_closed_state(tmp_path):
    e = MiniWoBEnv(task="navigate-tree", observation="axtree")
    try:
        obs, _ = e.reset(seed=1)
        lines = obs["text"].splitlines()
        folders = [i for i, line in enumerate(lines) if line.strip().endswith("listitem collapsed")]
        files = [i for i, line in enumerate(lines) if line.strip().endswith("listitem")]
        assert folders and files  # folders read "collapsed", files carry no open/closed state
        folder, label = (re.match(r"\s*\[(\d+)\]", lines[i]).group(1) for i in (folders[0], folders[0] + 1))
        obs, *_ = e.step(f'click("{label}")')  # the folder's name: the tree opens it
        assert f"[{folder}] listitem expanded" in obs["text"]
    finally:
        e.close()
    (tmp_path / "index.html").write_text(
        "<ul role='tree'><li role='treeitem' aria-expanded='false' aria-level='1'>Docs</li>"
        "<li role='treeitem' aria-selected='true' aria-level='1'>notes.txt</li></ul>"
        "<details open><summary>More</summary>x</details><button aria-pressed='true'>Bold</button>")
    e = envs.make("web", start_url="http://aria.test/", goal="Look.", validator={"js": "() => false"},
                  sites={"aria.test": str(tmp_path)}, observation="axtree")
    try:
        text = e.reset(seed=0)[0]["text"]
        assert re.search(r"\] tree$", text, re.M), text
        assert re.search(r'\] treeitem "?Docs"? collapsed level=1', text), text
        assert re.search(r'\] treeitem "?notes.txt"? selected level=1', text), text
        assert re.search(r"\] details .*expanded", text) and re.search(r'\] button "Bold" pressed', text), text
    finally:
        e.close()


def _allowed_request(url: str, serve: str) -> bool:
    u = urllib.parse.urlparse(url)
    if u.scheme in ("data", "blob", "about"):
        return True
    if serve == "file":
        return u.scheme == "file" and urllib.parse.unquote(u.path).startswith(str(miniwob_dir().parent.resolve()))
    return u.scheme == "http" and u.hostname == MINIWOB_HOST


@pytest.mark.parametrize("serve", SERVES)
def test_hostile_actions_execute_nothing_and_no_request_leaves(serve, tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from envs.web.actions import ACTIONS

    e = MiniWoBEnv(task="click-test", observation="axtree", serve=serve, max_steps=10_000)
    finished: list[str] = []

    def reset():
        e.reset(seed=0)
        if not hasattr(e.browser, "listened"):  # every later context is listened to from its first request
            new_context = e.browser.new_context

            def listened(*args, **kwargs):
                context, page = new_context(*args, **kwargs)
                e.browser.call(lambda: context.on("requestfinished", lambda req: finished.append(req.url)))
                return context, page

            e.browser.new_context = e.browser.listened = listened
            e.reset(seed=0)

    marker = tmp_path / "pwned"
    hostile_urls = [f"file://{marker}", "file:///etc/passwd", "http://127.0.0.1:1/", "https://example.com/",
                    "javascript:fetch('http://127.0.0.2:9/x')", "data:text/html,<img src='http://127.0.0.2:9/i'>",
                    f"http://{MINIWOB_HOST}.evil.test/", f"http://{MINIWOB_HOST}@127.0.0.2:9/", "view-source:x",
                    "chrome://settings", "ftp://127.0.0.1/", "//127.0.0.2:9/", "http://[::1]:1/"]
    code = [f"__import__('os').system('touch {marker}')", f"open('{marker}', 'w')", f"exec('open(\"{marker}\")')",
            "page.goto('https://example.com')", "self.page.evaluate('1')"]
    calls = st.builds(lambda name, args: f"{name}({args})",
                      st.sampled_from([*ACTIONS, "exec", "eval", "open", "__import__", "page.goto"]),
                      st.one_of(st.text(max_size=40), st.sampled_from([repr(u) for u in hostile_urls])))
    actions = st.one_of(st.text(max_size=80), calls, st.sampled_from(code),
                        st.sampled_from([f"goto({u!r})" for u in hostile_urls]),
                        st.lists(calls, min_size=2, max_size=4).map("\n".join))
    try:
        reset()
        for url in hostile_urls:  # every hostile URL once, whatever hypothesis draws
            obs, r, done, _, info = e.step(f"goto({url!r})")
            assert not info["action_valid"] and info["feedback"].startswith("Action refused"), url

        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
        @given(actions)
        def fuzz(action):
            obs, r, done, trunc, info = e.step(action)
            assert isinstance(obs["text"], str) and np.isfinite(r) and isinstance(info["action_valid"], bool)
            assert r <= 0.0 or info["state"]["url"] == task_url(e, "click-test")
            if done or trunc:
                reset()

        fuzz()
    finally:
        e.close()
    assert not marker.exists()
    leaked = [u for u in finished if not _allowed_request(u, serve)]
    assert any(u.endswith("/click-test.html") for u in finished) and not leaked, leaked
