"""Setup executor, file cache and evaluator logic against a scripted sandbox client (no desktop).

The real client/server pair is covered by the `desktop` and `docker` tiers; here a small
recorder stands in for the HTTP client so the control flow (placeholders, path mapping,
`until` polling, bounded retries, the infeasible rule, conj and/or) is checked exactly.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from envs.osworld.controller import FileCache, SetupError, VMController
from envs.osworld.evaluator import EvalError, evaluate
from envs.osworld.tasks import SetupStep, parse_task
from sandboxes.client import CommandResult, SandboxRequestError


class FakeClient:
    """Records calls; ``outputs`` scripts what successive execute() calls print."""

    def __init__(self, outputs: list[tuple[str, int]] | None = None, wrapper: bool = False):
        self.calls: list[tuple] = []
        self.outputs = list(outputs or [])
        self.wrapper = wrapper
        self.windows_seq: list[list[dict]] = []
        self.files: dict[str, bytes] = {}
        self.fail_activate = 0

    def execute(self, command, shell=False, timeout=None, check=False):
        self.calls.append(("execute", command, shell))
        if isinstance(command, str) and command.startswith('printf "%s\\n%s\\n"'):
            return CommandResult("/home/agent\n45555\n", "", 0)
        if command == "command -v vagen-chromium":
            return CommandResult("", "", 0 if self.wrapper else 1)
        if self.outputs:
            out, rc = self.outputs.pop(0)
            return CommandResult(out, "", rc)
        return CommandResult("", "", 0)

    def screen_size(self):
        return (1280, 800)

    def launch(self, command, shell=False):
        self.calls.append(("launch", command, shell))
        return "ok"

    def input(self, actions, settle=None):
        self.calls.append(("input", actions))
        return {"status": "success"}

    def upload(self, path, data):
        self.calls.append(("upload", path))
        self.files[path] = data
        return "ok"

    def download(self, path):
        if path not in self.files:
            raise SandboxRequestError("POST /file -> 404", 404)
        return self.files[path]

    def windows(self):
        return self.windows_seq.pop(0) if self.windows_seq else []

    def activate_window(self, name, strict=False, by_class=False):
        self.calls.append(("activate", name))
        if self.fail_activate:
            self.fail_activate -= 1
            raise SandboxRequestError("no window", 404)
        return "ok"

    def open_file(self, path, window_name=None, timeout=30):
        self.calls.append(("open", path))
        return "ok"


def test_paths_placeholders_and_browser_rewrites():
    vm = VMController(FakeClient())
    assert (vm.home, vm.cdp_port, vm.screen) == ("/home/agent", 45555, (1280, 800))
    assert vm.vm_path("/home/user/a.txt") == "/home/agent/a.txt"
    assert vm.vm_path("rel/x") == "/home/agent/rel/x" and vm.vm_path("~/y") == "/home/agent/y"
    assert vm.vm_path("/home/username/z") == "/home/username/z" and vm.vm_path("/etc/hosts") == "/etc/hosts"
    assert vm.substitute("click {SCREEN_WIDTH_HALF},{SCREEN_HEIGHT} {HOME} {CDP_PORT} {CLIENT_PASSWORD}") == \
        "click 640,800 /home/agent 45555 password"
    assert vm.substitute("ls /home/user; open file:///home/user/p.html; /data/home/user") == \
        "ls /home/agent; open file:///home/agent/p.html; /data/home/user"
    argv = vm.browser_command(["google-chrome", "--remote-debugging-port=1337", "https://x.invalid"])
    assert argv[:2] == ["sh", "-c"] and "--remote-debugging-port=45555" in argv[2] and argv[-1] == "https://x.invalid"
    assert "1337" not in " ".join(argv) and vm.browser_command(["mousepad"]) is None
    assert VMController(FakeClient(wrapper=True)).browser_command(["chromium", "a"]) == ["vagen-chromium", "a"]


def test_execute_until_polls_and_pyautogui_scripts_become_input(tmp_path):
    client = FakeClient(outputs=[("starting", 1), ("starting", 1), ("ready", 0)])
    vm = VMController(client, work_dir=tmp_path)
    vm.run_steps([SetupStep("execute", {"command": "check {SCREEN_WIDTH}", "shell": True,
                                        "until": {"returncode": 0}, "stdout": "out.txt"})])
    runs = [c for c in client.calls if c[0] == "execute" and c[1] == "check 1280"]
    assert len(runs) == 3 and (tmp_path / "out.txt").read_text() == "ready"
    vm.run_steps([SetupStep("execute", {"command": ["python", "-c", "import pyautogui; pyautogui.hotkey('ctrl', 's')"]})])
    assert client.calls[-1] == ("input", [{"type": "key", "keys": ["ctrl", "s"]}])
    with pytest.raises(SetupError, match="outside the pyautogui grammar"):
        vm.run_steps([SetupStep("execute", {"command": ["python3", "-c", "import pyautogui, os; os.system('x')"]})])
    with pytest.raises(SetupError, match="until"):
        vm.run_steps([SetupStep("execute", {"command": "x", "until": {"exitcode": 0}})])


def test_until_gives_up_and_steps_are_named(tmp_path):
    vm = VMController(FakeClient(outputs=[("no", 1)] * 100))
    with pytest.raises(SetupError, match=r"config\[0\] \(command\).*not met"):
        vm.run_steps([SetupStep("command", {"command": "probe", "until": {"stdout": "yes"}, "timeout": 1})])
    with pytest.raises(SetupError, match="not supported here"):
        vm.run_steps([SetupStep("googledrive", {})])
    with pytest.raises(SetupError, match="bad parameters"):
        vm.run_steps([SetupStep("sleep", {"seconds": 0, "bogus": 1})])


def test_window_steps_retry_with_a_bound_and_launch_special_cases():
    client = FakeClient()
    vm = VMController(client, retries=3)
    client.fail_activate = 2  # the window appears on the third try
    vm.run_steps([SetupStep("activate_window", {"window_name": "Doc"})])
    assert [c for c in client.calls if c[0] == "activate"] == [("activate", "Doc")] * 3
    client.fail_activate = 5
    with pytest.raises(SetupError, match="after 3 attempts"):
        vm.run_steps([SetupStep("activate_window", {"window_name": "Doc"})])
    n = len(client.calls)
    vm.run_steps([SetupStep("launch", {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]})])
    assert len(client.calls) == n  # OSWorld's CDP forward is skipped
    vm.run_steps([SetupStep("launch", {"command": ["pkill", "-x", "chromium"]})])
    assert client.calls[-1][0] == "execute"  # waited for, not fired and forgotten


def test_a_browser_kill_is_scoped_to_the_sandbox_browser():
    # local sandbox: only the browser on this sandbox's DevTools port, never the user's own browsers
    vm = VMController(FakeClient())
    vm.run_steps([SetupStep("launch", {"command": ["pkill", "-x", "chromium"]})])
    assert vm.client.calls[-1][1] == ["pkill", "-f", "--", "--remote-debugging-port=45555( |$)"]
    assert vm.kill_command(["killall", "-9", "google-chrome"]) == [
        "pkill", "-9", "-f", "--", "--remote-debugging-port=45555( |$)"]
    assert vm.kill_command(["pkill", "-x", "mousepad"]) == ["pkill", "-x", "mousepad"]
    # container (vagen-chromium wrapper): the container is the VM, the command runs as written
    vm = VMController(FakeClient(wrapper=True))
    assert vm.kill_command(["pkill", "-x", "chromium"]) == ["pkill", "-x", "chromium"]


def test_execute_with_verification_waits_for_the_window():
    client = FakeClient()
    client.windows_seq = [[], [{"title": "notes.txt - Mousepad"}]]
    vm = VMController(client)
    vm.run_steps([SetupStep("execute_with_verification", {"command": ["mousepad"], "check_interval": 0.01,
                                                          "verification": {"window_exists": "Mousepad"}})])
    client.windows_seq = []
    with pytest.raises(SetupError, match="verification"):
        vm.run_steps([SetupStep("execute_with_verification", {"command": ["x"], "max_wait_time": 0.05,
                                                              "check_interval": 0.01,
                                                              "verification": {"window_exists": "Nope"}})])


def test_file_cache_lookup_and_download_upload(tmp_path):
    url = "https://files.invalid/d/report.txt"
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "a.txt").write_text("from index")
    (tmp_path / "idx" / "index.json").write_text(json.dumps({url: "a.txt", "https://x.invalid/esc": "../outside"}))
    osw = tmp_path / "osworld" / "task-1"
    osw.mkdir(parents=True)
    (osw / f"{uuid.uuid5(uuid.NAMESPACE_URL, url + '2')}_report.txt").write_text("osworld layout")
    cache = FileCache([tmp_path / "idx", tmp_path / "osworld"])
    assert cache.lookup(url).read_text() == "from index"
    assert cache.lookup(url + "2", "report.txt", task_id="task-1").read_text() == "osworld layout"
    with pytest.raises(SetupError, match="outside its folder"):
        cache.lookup("https://x.invalid/esc")
    with pytest.raises(SetupError, match="not in the file cache.*network downloads are off"):
        cache.fetch("https://files.invalid/missing.bin")
    client = FakeClient()
    vm = VMController(client, cache=cache)
    vm.run_steps([SetupStep("download", {"files": [{"url": url, "path": "/home/user/Documents/r.txt"}]})])
    assert client.files["/home/agent/Documents/r.txt"] == b"from index"
    with pytest.raises(SetupError, match="does not exist"):
        vm.run_steps([SetupStep("upload_file", {"files": [{"local_path": str(tmp_path / "no"), "path": "x"}]})])


def _task(evaluator: dict) -> object:
    return parse_task({"id": "t", "instruction": "x", "config": [], "evaluator": evaluator})


def test_evaluator_conj_infeasible_and_fail_rules(tmp_path):
    vm = VMController(FakeClient())
    rule = lambda v: {"type": "rule", "rules": v}  # noqa: E731
    both = {"func": ["exact_match", "exact_match"], "result": [rule("a"), rule("b")],
            "expected": [rule({"expected": "a"}), rule({"expected": "zzz"})]}
    assert evaluate(_task({**both, "conj": "and"}), vm, "DONE", tmp_path).score == 0.0
    assert evaluate(_task({**both, "conj": "or"}), vm, "DONE", tmp_path).score == 1.0
    assert evaluate(_task({**both, "conj": "or"}), vm, "FAIL", tmp_path).score == 0.0  # feasible + FAIL
    inf = _task({"func": "infeasible"})
    assert evaluate(inf, vm, "FAIL", tmp_path).score == 1.0 and evaluate(inf, vm, "DONE", tmp_path).score == 0.0
    assert evaluate(inf, vm, None, tmp_path).score == 0.0
    # /home/user in rules means the sandbox's home, as in commands
    t = _task({"func": "exact_match", "result": rule("/home/agent/x"), "expected": rule({"expected": "/home/user/x"})})
    assert evaluate(t, vm, "DONE", tmp_path).score == 1.0
    # a missing result file scores 0; a misconfigured metric is an evaluation error, not a 0
    (tmp_path / "gold.txt").write_text("gold\n")
    t = _task({"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/none.txt", "dest": "n"},
               "expected": {"type": "local_file", "path": str(tmp_path / "gold.txt")}})
    assert evaluate(t, vm, "DONE", tmp_path).score == 0.0
    t = _task({"func": "exact_match", "result": rule("a"), "expected": rule({"wrong_key": 1})})
    with pytest.raises(EvalError, match="exact_match"):
        evaluate(t, vm, "DONE", tmp_path)
    t = _task({"func": "compare_pdfs", "result": rule("a")})
    with pytest.raises(EvalError, match="not implemented"):
        evaluate(t, vm, "DONE", tmp_path)


def test_relative_time_rule(tmp_path):
    import datetime as dt

    vm = VMController(FakeClient())
    t = _task({"func": "exact_match", "result": {"type": "rule", "rules": str(dt.date.today().year)},
               "expected": {"type": "rule_relativeTime", "rules": {"relativeTime": {"from": "today"},
                                                                    "expected": "{Year}"}}})
    assert evaluate(t, vm, "DONE", tmp_path).score == 1.0
    y = dt.date.today() - dt.timedelta(days=1)
    t = _task({"func": "exact_match", "result": {"type": "rule", "rules": f"{y.month:02d}/{y.day:02d}"},
               "expected": {"type": "rule_relativeTime", "rules": {"relativeTime": {"from": "yesterday"},
                                                                    "expected": "{Month0D}/{Day0D}"}}})
    assert evaluate(t, vm, "DONE", tmp_path).score == 1.0


def test_getter_configs_are_checked_before_the_getter_runs(tmp_path):
    from envs.osworld.getters import GetterError, run_getter

    client = FakeClient()
    vm = VMController(client)
    before = list(client.calls)
    with pytest.raises(GetterError, match="getter 'vm_file' needs 'path'"):
        run_getter(vm, {"type": "vm_file", "dest": "a.txt"}, tmp_path)
    with pytest.raises(GetterError, match="'gives' must list indices"):
        run_getter(vm, {"type": "vm_file", "multi": True, "path": ["/a"], "dest": ["a"], "gives": [3]}, tmp_path)
    with pytest.raises(GetterError, match="'next blue moon' is not a phrase"):
        run_getter(vm, {"type": "rule_relativeTime", "rules": {"relativeTime": {"from": "next blue moon"},
                                                               "expected": {"time": "{Year}"}}}, tmp_path)
    assert client.calls == before  # nothing reached the sandbox
    t = _task({"func": "exact_match", "result": {"type": "vm_command_line"},
               "expected": {"type": "rule", "rules": {"expected": "x"}}})
    with pytest.raises(EvalError, match="needs 'command'"):
        evaluate(t, vm, "DONE", tmp_path)


def test_reference_postconfig_pyautogui_is_understood():
    """OSWorld's Calc postconfig saves with `python -c "import pyautogui; pyautogui.hotkey(...)"`."""
    ref = Path(__file__).resolve().parents[4] / "shared" / "osworld_reference"
    p = ref / "libreoffice_calc__01b269ae-2111-4a07-81fd-3fcd711993b0.json"
    if not p.is_file():
        pytest.skip("no OSWorld reference tasks")
    from envs.osworld.tasks import load_task

    client = FakeClient()
    vm = VMController(client)
    post = load_task(p).evaluator.postconfig
    vm.run_steps([s for s in post if s.type == "execute"])
    assert ("input", [{"type": "key", "keys": ["ctrl", "s"]}]) in client.calls


def test_paths_linked_out_of_the_sandbox_read_as_missing_and_score_zero(tmp_path):
    class LinkedOut(FakeClient):  # the server's answer for a symlink that leads out of its roots
        def download(self, path):
            raise SandboxRequestError("POST /file -> 403", 403, {"status": "error", "reason": "symlink"})

        def list_directory(self, path):
            raise SandboxRequestError("POST /list_directory -> 403", 403, {"status": "error", "reason": "symlink"})

    vm = VMController(LinkedOut())
    t = _task({"func": "check_list", "result": {"type": "list_directory", "path": "/home/user/out"},
               "expected": {"type": "rule", "rules": {"expected": ["a"]}}})
    r = evaluate(t, vm, "DONE", tmp_path)
    assert r.score == 0.0 and "read as missing: /home/user/out (a symbolic link" in r.detail
    assert "(result: None)" in r.detail
    vm = VMController(LinkedOut())
    (tmp_path / "gold.txt").write_text("gold\n")
    t = _task({"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/a.txt", "dest": "a"},
               "expected": {"type": "local_file", "path": str(tmp_path / "gold.txt")}})
    assert evaluate(t, vm, "DONE", tmp_path).detail.endswith("read as missing: /home/user/a.txt (a symbolic link "
                                                           "leading outside the sandbox's folders)")
    # Any other refusal (a task path outside the roots) is still an evaluation that could not run.
    class Outside(FakeClient):
        def download(self, path):
            raise SandboxRequestError("POST /file -> 403", 403, {"status": "error"})

    with pytest.raises(SandboxRequestError):
        evaluate(t, VMController(Outside()), "DONE", tmp_path)
