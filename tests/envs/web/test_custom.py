"""`desktop` tier: custom web tasks in real Chromium — the bundled Acme tasks (oracle 1.0,
noop 0), one-off start_url tasks against a real loopback HTTP server, local sites, and the
host allow-list (file:// and other hosts refused, page requests to them blocked)."""

from __future__ import annotations

import http.server
import threading

import pytest

import envs
from envs.web.tasks import list_web_tasks

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def env():
    e = envs.make("web", tasks=list(list_web_tasks()), observation="axtree")
    yield e
    e.close()


def bid_of(text: str, role: str) -> str:
    """The bid of the first element-tree line with this role."""
    for line in text.splitlines():
        head, _, rest = line.strip().partition("] ")
        if head.startswith("[") and rest.split(" ")[0] == role:
            return head[1:]
    raise AssertionError(f"no {role} in {text}")


def play_oracle(e, info, limit=15):
    reward, done, steps = 0.0, False, 0
    while not done and steps < limit:
        plan = info["state"].get("oracle") or []
        assert plan, f"the oracle has no plan on {info['state']['url']}"
        _, reward, done, _, info = e.step(plan[0])
        assert not info["feedback"], info["feedback"]
        steps += 1
    return reward, done, info


@pytest.mark.parametrize("task", sorted(list_web_tasks()))
def test_bundled_task_oracle_scores_one_and_noop_zero(env, task):
    for seed in (0, 1):
        obs, info = env.reset(seed=seed, options={"task_id": task})
        assert obs["text"].startswith(f"Goal: {env.goal}") and "[" in obs["text"]
        assert info["state"]["url"].startswith("http://vagen.test/acme/")
        reward, done, info = play_oracle(env, info)
        assert (reward, done, info["success"]) == (1.0, True, True), (task, seed, env.goal)
        assert info["blocked_requests"] == 0
    env.reset(seed=5, options={"task_id": task})
    _, reward, done, _, info = env.step("noop(wait_ms=0)")
    assert (reward, done, info["success"]) == (0.0, False, False)


def test_seeded_goals_and_wrong_answers(env):
    g = [env.reset(seed=s, options={"task_id": "acme-login"})[0]["text"] for s in (4, 4, 5)]
    assert g[0] == g[1] != g[2]
    env.reset(seed=3, options={"task_id": "acme-price-question"})
    _, reward, done, _, info = env.step('send_msg_to_user("It costs $0.01")')
    assert (reward, done, info["success"]) == (0.0, True, False)
    env.reset(seed=3, options={"task_id": "acme-infeasible"})
    _, reward, done, _, info = env.step('send_msg_to_user("done")')
    assert (reward, done) == (0.0, True) and "answered" in info["reason"]


def test_navigation_outside_the_allow_list_is_refused(env):
    env.reset(seed=0, options={"task_id": "acme-find-product"})
    for url in ("file:///etc/passwd", "http://127.0.0.1:9/", "https://example.com/", "javascript:alert(1)"):
        obs, _, _, _, info = env.step(f"goto({url!r})")
        assert "refused" in info["feedback"] and info["state"]["url"].startswith("http://vagen.test/"), url
    obs, *_ = env.step('goto("http://vagen.test/acme/help.html")')  # the local site is allowed
    assert "cannot be changed" in obs["text"]
    obs, *_ = env.step('goto("http://vagen.test/acme/../../../etc/passwd")')
    assert "root:" not in obs["text"]


class Site(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []
    PAGES = {
        "/": b"<html><body><h1>Start</h1><a href='/done'>Finish</a>"
             b"<input id='q' aria-label='Query'><img src='http://127.0.0.2:9/pixel.png'></body></html>",
        "/done": b"<html><body><p id='msg'>All done, order 42</p></body></html>",
    }

    def do_GET(self):  # noqa: N802 - http.server API
        Site.hits.append(self.path)
        body = self.PAGES.get(self.path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body or b"missing")

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_start_url_task_with_declarative_validator(server):
    e = envs.make("web", start_url=server + "/", goal="Open the finish page.",
                  validator={"element_text": {"selector": "#msg", "matches": r"order \d+"}},
                  oracle_actions=["noop(wait_ms=0)"], observation="som")
    try:
        obs, info = e.reset(seed=0)
        assert obs["images"][0].shape == (600, 800, 3) and info["state"]["oracle"] == ["noop(wait_ms=0)"]
        assert e.blocked_requests == 1  # the image on another host (127.0.0.2) never left the browser
        bid = bid_of(obs["text"], "link")
        _, reward, done, _, info = e.step(f'click("{bid}")')
        assert (reward, done, info["success"]) == (1.0, True, True)
        assert info["state"]["url"] == server + "/done"
        # another port on the same host is not the task's site
        other = server.rsplit(":", 1)[0] + ":1/"
        e.reset(seed=0)
        _, _, _, _, info = e.step(f"goto({other!r})")
        assert "refused" in info["feedback"]
    finally:
        e.close()
    assert "/pixel.png" not in Site.hits


def test_start_url_task_with_python_validator_and_chat(server):
    seen = []

    def validate(page, chat):
        seen.append(page.url)
        return any("42" in m["message"] for m in chat)

    e = envs.make("web", start_url=server + "/done", goal="What is the order number?", validator=validate,
                  observation="axtree")
    try:
        e.reset(seed=1)
        _, reward, done, *_ = e.step("noop(wait_ms=0)")
        assert (reward, done) == (0.0, False)
        _, reward, done, *_ = e.step('send_msg_to_user("order 42")')
        assert (reward, done) == (1.0, True) and seen[-1] == server + "/done"
    finally:
        e.close()


def test_extra_local_site(tmp_path):
    (tmp_path / "index.html").write_text("<html><body><button id='b' onclick=\"document.title='clicked'\">"
                                         "Press</button></body></html>")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("<p>sub page</p>")
    e = envs.make("web", start_url="http://myapp.test/", goal="Press the button.",
                  validator={"js": "() => document.title === 'clicked'"}, sites={"myapp.test": str(tmp_path)},
                  observation="axtree")
    try:
        obs, _ = e.reset(seed=0)
        assert "Press" in obs["text"]
        bid = bid_of(obs["text"], "button")
        _, reward, done, *_ = e.step(f'click("{bid}")')
        assert (reward, done) == (1.0, True)
        obs, *_ = e.step('goto("http://myapp.test/sub/")')
        assert "sub page" in obs["text"]
        obs, *_ = e.step('goto("http://myapp.test/nothing.html")')
        assert "not found" in obs["text"]
    finally:
        e.close()


def test_serve_never_leaves_the_site_folder(tmp_path):
    from envs.web.env import WebEnv

    (tmp_path / "site").mkdir()
    (tmp_path / "secret.txt").write_text("secret")

    class Route:
        def fulfill(self, **kw):
            self.kw = kw

    import urllib.parse

    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/sub/../../secret.txt", "//etc/passwd"):
        r = Route()
        WebEnv._serve(r, tmp_path / "site", urllib.parse.unquote(path))
        assert r.kw["status"] == 404, path


def test_vagen_eval_web_suite_with_the_oracle(tmp_path):
    import json

    from vagen.eval.runner import EvalSettings, run_eval

    tasks = sorted(list_web_tasks())
    summary = run_eval(EvalSettings(suite="web", policy="scripted:oracle", out=tmp_path / "run", max_steps=10,
                                    num_envs=1, seeds=[0], progress=False, save_screenshots=False,
                                    env_params={"observation": "axtree"}))
    assert summary["stats"]["n"] == len(tasks) and summary["stats"]["rate"] == 1.0
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == tasks


def test_share_browser_isolates_envs_in_one_chromium():
    """share_browser=True: envs of a process share one Chromium (and driver), each in its own
    context — the same origin's storage is not shared, episodes run concurrently, and the
    browser closes when the last env does."""
    from concurrent.futures import ThreadPoolExecutor

    from envs.web.browser import _SHARED

    es = [envs.make("web", task="acme-login", observation="axtree", share_browser=True) for _ in range(3)]
    try:
        for e in es:
            e.reset(seed=0)
        assert len({id(e.browser) for e in es}) == 1 and len({id(e.context) for e in es}) == 3
        pid = es[0].browser.pid()

        def solve(e):
            obs, info = e.reset(seed=es.index(e))  # three different accounts, same origin
            return play_oracle(e, info)[:2]

        with ThreadPoolExecutor(3) as ex:
            assert list(ex.map(solve, es)) == [(1.0, True)] * 3
        sessions = [e.browser.call(lambda e=e: e.page.evaluate("() => localStorage.getItem('acme.session')"))
                    for e in es]
        assert len(set(sessions)) == 3  # each context its own storage
        es[0].close()
        es[1].reset(seed=5)
        assert es[1].browser.pid() == pid and es[1].step("noop(wait_ms=0)")[1] == 0.0  # the others go on
    finally:
        for e in es:
            e.close()
    assert not _SHARED
    with pytest.raises(ValueError, match="share_browser"):
        envs.make("web", share_browser=True, cdp_url="http://127.0.0.1:9")
