"""Default tier: the custom web task registry, outcomes and validator specs (no browser)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

import envs
from envs.web import acme
from envs.web.tasks import (
    SITES_DIR,
    WEB_TASKS,
    WebTask,
    WebTaskError,
    compile_validator,
    list_web_tasks,
    normalize_outcome,
    register_web_task,
    web_task,
)


def test_bundled_tasks_are_registered_with_descriptions():
    tasks = list_web_tasks()
    assert {"acme-login", "acme-find-product", "acme-add-to-cart", "acme-remove-from-cart", "acme-settings",
            "acme-price-question", "acme-infeasible"} <= set(tasks)
    assert all(tasks.values())
    assert "web" in envs.list_envs()


def test_python_catalog_matches_the_site():
    js = (SITES_DIR / "acme" / "acme.js").read_text()
    rows = re.findall(r'\{id: (\d+), name: "([^"]+)", price: ([\d.]+)', js)
    assert [(int(i), n, float(p)) for i, n, p in rows] == acme.CATALOG
    assert json.loads(re.search(r"const LANGUAGES = (\[.*?\]);", js).group(1)) == acme.LANGUAGES
    assert json.loads(re.search(r"const THEMES = (\[.*?\]);", js).group(1)) == acme.THEMES


@pytest.mark.parametrize(("value", "expected"), [
    (True, (1.0, True, {"success": True})),
    (False, (0.0, False, {"success": False})),
    (0.5, (0.5, True, {"success": True})),
    (0, (0.0, False, {"success": False})),
    ((0.0, True, {"reason": "x"}), (0.0, True, {"reason": "x", "success": False})),
    ((1, True, None), (1.0, True, {"success": True})),
    ((1.0, True, {"success": False}), (1.0, True, {"success": False})),
])
def test_normalize_outcome(value, expected):
    assert normalize_outcome(value) == expected


@pytest.mark.parametrize("value", [None, "yes", (1, 2), [1.0, True], {"reward": 1}])
def test_normalize_outcome_rejects_other_shapes(value):
    with pytest.raises(WebTaskError, match="validator returned"):
        normalize_outcome(value)


class FakePage:
    def __init__(self, url="http://vagen.test/acme/index.html", values=None):
        self.url, self.values = url, values or {}

    def evaluate(self, js, arg=None):
        if arg is None:
            return self.values.get(js)
        return self.values.get(arg)


def test_declarative_validators():
    page = FakePage("http://shop.test/done?id=3", {"#msg": "Order 17 placed", "() => window.ok": 1})
    chat = [{"role": "assistant", "message": "The price is $12.50"}]
    ok = lambda spec: compile_validator(spec)(page, chat)[0] == 1.0  # noqa: E731
    assert ok({"url_matches": r"/done\?id=3$"})
    assert not ok({"url_matches": r"/other"})
    assert ok({"element_text": {"selector": "#msg", "contains": "Order 17"}})
    assert ok({"element_text": {"selector": "#msg", "matches": r"Order \d+ placed"}})
    assert not ok({"element_text": {"selector": "#msg", "equals": "Order"}})
    assert not ok({"element_text": {"selector": "#missing", "contains": ""}})
    assert ok({"chat_contains": "12.50"}) and not ok({"chat_contains": "13"})
    assert ok({"infeasible": False}) and not ok({"infeasible": True})
    assert ok({"js": "() => window.ok"})
    assert ok({"all": [{"url_matches": "done"}, {"chat_contains": "price"}]})
    assert not ok({"all": [{"url_matches": "done"}, {"chat_contains": "nope"}]})
    assert ok({"any": [{"url_matches": "nope"}, {"chat_contains": "price"}]})
    assert compile_validator(lambda p, c: (0.25, False, {}))(page, chat) == (0.25, False, {"success": False})
    assert compile_validator("tests.envs.web.test_tasks:always_true")(page, chat)[0] == 1.0


def always_true(page, chat):
    return True


@pytest.mark.parametrize(("spec", "message"), [
    ({}, "one of"),
    ({"url_matches": "a", "js": "b"}, "one of"),
    ({"nope": 1}, "unknown key 'nope'"),
    ({"url_matches": 3}, "regex string"),
    ({"element_text": {"contains": "x"}}, "selector"),
    ({"element_text": {"selector": "#a"}}, "exactly one of contains/equals/matches"),
    ({"element_text": {"selector": "#a", "matches": "("}}, "bad regex"),
    ({"chat_contains": ""}, "non-empty"),
    ({"all": []}, "non-empty list"),
    ({"any": [{"bogus": 1}]}, "unknown key 'bogus'"),
    ("no_colon_here", "package.module:function"),
    ("tests.envs.web.test_tasks:not_there", "cannot import"),
    (42, "dict with one of"),
])
def test_bad_validator_specs_are_clear_errors(spec, message):
    with pytest.raises(WebTaskError, match=re.escape(message)):
        compile_validator(spec)


def test_make_web_checks_its_arguments_before_any_browser_starts():
    with pytest.raises(ValueError, match="needs a goal"):
        envs.make("web", start_url="http://127.0.0.1:1/", validator={"url_matches": "x"})
    with pytest.raises(ValueError, match="needs a validator"):
        envs.make("web", start_url="http://127.0.0.1:1/", goal="g")
    with pytest.raises(ValueError, match="http"):
        envs.make("web", start_url="ftp://x/", goal="g", validator={"url_matches": "x"})
    with pytest.raises(ValueError, match="unknown key"):
        envs.make("web", start_url="http://127.0.0.1:1/", goal="g", validator={"urlmatch": "x"})
    with pytest.raises(ValueError, match="not both"):
        envs.make("web", task="acme-login", start_url="http://127.0.0.1:1/", goal="g", validator=True)
    with pytest.raises(ValueError, match="did you mean acme-login"):
        envs.make("web", task="acme-logn")
    with pytest.raises(ValueError, match="not a folder"):
        envs.make("web", sites={"my.test": "/nonexistent/dir"})
    with pytest.raises(ValueError, match="bad host"):
        envs.make("web", sites={"a/b": str(SITES_DIR)})
    env = envs.make("web", tasks=["acme-login", "acme-settings"])
    assert env.browser is None and env.task_names == ["acme-login", "acme-settings"]
    env.close()


def test_register_web_task_forms():
    def setup(page, rng):
        return f"goal {rng.randint(0, 9)}"

    cls = register_web_task("test-fn-task", setup=setup, validate=lambda page, chat: bool(chat),
                            description="d", allow_hosts=("example.test",))
    try:
        assert web_task("test-fn-task") is cls and cls.allow_hosts == ("example.test",)
        t = cls(seed=3)
        assert t.setup(None) == cls(seed=3).setup(None)  # seeded
        assert t.validate(None, []) == (0.0, False, {"success": False})
        assert t.oracle(None) == []
    finally:
        WEB_TASKS.pop("test-fn-task", None)
    with pytest.raises(WebTaskError, match="both setup and validate"):
        register_web_task("x", setup=setup)
    with pytest.raises(WebTaskError, match="letters, digits"):
        register_web_task("bad name")
    with pytest.raises(WebTaskError, match="WebTask subclass"):
        register_web_task("x")(SimpleNamespace)
    assert issubclass(web_task("acme-login"), WebTask)
