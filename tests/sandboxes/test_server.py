"""The control server over real HTTP on loopback, without a desktop: auth, path confinement,
body limits, bad JSON, command time limits, file routes, input validation; and the client's
typed errors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from sandboxes.client import (
    SandboxAuthError,
    SandboxClient,
    SandboxRequestError,
    SandboxTimeout,
    SandboxUnavailable,
)
from sandboxes.server import ControlServer, Desktop, ServerConfig, SessionSpec, compile_actions
from sandboxes.server.desktop import ActionError, keysym

TOKEN = "test-token-123"


@pytest.fixture
def server(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret")
    desktop = Desktop(SessionSpec(display=":4242", home=str(home)))  # no X server there
    cfg = ServerConfig(port=0, token=TOKEN, roots=[str(home)], max_body=4096, command_timeout=5.0,
                       max_command_timeout=10.0)
    srv = ControlServer(cfg, desktop)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield srv, home, tmp_path
    srv.shutdown()
    srv.server_close()


def auth(token: str = TOKEN) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("route", ["/health", "/screenshot", "/platform", "/accessibility", "/cursor_position"])
def test_every_route_needs_the_token(server, route):
    srv, _, _ = server
    assert httpx.get(srv.url + route).status_code == 401
    assert httpx.get(srv.url + route, headers=auth("wrong")).status_code == 401
    assert httpx.get(srv.url + route, headers={"Authorization": TOKEN}).status_code == 401  # no scheme


def test_post_routes_need_the_token_too(server):
    srv, _, _ = server
    for route in ("/execute", "/setup/execute", "/input", "/reset", "/file", "/setup/upload", "/list_directory"):
        r = httpx.post(srv.url + route, json={"command": ["true"]})
        assert r.status_code == 401, route
        assert r.json()["status"] == "error"


def test_binds_loopback_by_default_and_needs_a_token(tmp_path):
    assert ServerConfig().host == "127.0.0.1"
    with pytest.raises(ValueError, match="token"):
        ControlServer(ServerConfig(port=0, token=""), Desktop(SessionSpec(display=":4242", home=str(tmp_path))))


def test_main_refuses_remote_bind_and_missing_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "VAGEN_SANDBOX_TOKEN"}
    r = subprocess.run([sys.executable, "-m", "sandboxes.server", "--port", "0"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "token" in r.stderr
    r = subprocess.run([sys.executable, "-m", "sandboxes.server", "--host", "0.0.0.0", "--port", "0"],
                       env={**env, "VAGEN_SANDBOX_TOKEN": "x"}, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--allow-remote" in r.stderr


def test_platform_and_unknown_routes(server):
    srv, _, _ = server
    assert httpx.get(srv.url + "/platform", headers=auth()).text == "Linux"
    r = httpx.get(srv.url + "/nope", headers=auth())
    assert r.status_code == 404
    r = httpx.get(srv.url + "/execute", headers=auth())
    assert r.status_code == 405 and "POST" in r.json()["message"]


def test_health_reports_a_dead_display_as_503(server):
    srv, _, _ = server
    r = httpx.get(srv.url + "/health", headers=auth())
    assert r.status_code == 503 and r.json()["status"] == "unhealthy"


def test_execute_argv_shell_and_returncode(server):
    srv, home, _ = server
    r = httpx.post(srv.url + "/execute", headers=auth(), json={"command": ["sh", "-c", "echo out; echo err >&2; exit 3"]})
    assert r.status_code == 200
    assert r.json() == {"status": "success", "output": "out\n", "error": "err\n", "returncode": 3}
    r = httpx.post(srv.url + "/setup/execute", headers=auth(), json={"command": "echo $HOME", "shell": True})
    assert r.json()["output"].strip() == str(home)  # commands see the desktop user's HOME
    r = httpx.post(srv.url + "/execute", headers=auth(), json={"command": "printf '%s' 'a b'"})  # split like a shell
    assert r.json()["output"] == "a b"
    r = httpx.post(srv.url + "/execute", headers=auth(), json={"command": ["/no/such/binary"]})
    assert r.json()["returncode"] == 127


def test_execute_does_not_leak_the_token(server):
    srv, _, _ = server
    os.environ["VAGEN_SANDBOX_TOKEN_PROBE"] = "x"  # the server strips VAGEN_SANDBOX_TOKEN* from child envs
    try:
        r = httpx.post(srv.url + "/execute", headers=auth(), json={"command": "env", "shell": True})
    finally:
        del os.environ["VAGEN_SANDBOX_TOKEN_PROBE"]
    assert "VAGEN_SANDBOX_TOKEN" not in r.json()["output"]


def test_command_timeout_kills_the_process_group(server, tmp_path):
    srv, _, _ = server
    marker = tmp_path / "late"
    r = httpx.post(srv.url + "/execute", headers=auth(), timeout=30,
                   json={"command": f"sleep 3 & sleep 3; touch {marker}", "shell": True, "timeout": 0.5})
    assert r.status_code == 504 and r.json()["status"] == "timeout"
    assert not marker.exists()  # answered at the timeout, before the command could finish
    time.sleep(3.2)
    assert not marker.exists()  # the shell was killed, not left running
    # Requested timeouts are capped by the server's maximum; bad ones are refused.
    r = httpx.post(srv.url + "/execute", headers=auth(), json={"command": ["true"], "timeout": -1})
    assert r.status_code == 400


@pytest.mark.parametrize("body, status, fragment", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "must be an object"),
    (b'{"command": 5}', 400, "command"),
    (b'{"command": []}', 400, "command"),
    (b'{"command": "x", "shell": "yes"}', 400, "shell"),
    (b'{"command": "unterminated \'quote"}', 400, "split"),
])
def test_bad_requests_get_400(server, body, status, fragment):
    srv, _, _ = server
    r = httpx.post(srv.url + "/execute", headers={**auth(), "Content-Type": "application/json"}, content=body)
    assert r.status_code == status
    assert fragment in r.json()["message"]


def test_body_over_the_limit_gets_413_and_the_server_keeps_serving(server):
    srv, _, _ = server
    r = httpx.post(srv.url + "/execute", headers=auth(), content=b"x" * 10_000)
    assert r.status_code == 413
    # A huge declared length is refused without being read.
    with socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=5) as s:
        s.sendall(b"POST /execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
                  + b"\r\nContent-Length: 99999999999\r\n\r\n")
        assert b" 413 " in s.recv(4096).split(b"\r\n", 1)[0]
    assert httpx.get(srv.url + "/platform", headers=auth()).status_code == 200


def test_file_routes_are_confined_to_the_roots(server):
    srv, home, tmp = server
    (home / "link").symlink_to(tmp / "outside")
    for path in ["/etc/passwd", str(tmp / "outside" / "secret.txt"), "~/../outside/secret.txt",
                 "~/link/secret.txt", "$HOME/../outside/secret.txt"]:
        r = httpx.post(srv.url + "/file", headers=auth(), data={"file_path": path})
        assert r.status_code == 403, path
        assert "outside the allowed roots" in r.json()["message"]
        # A symlink inside the roots is told apart (the evaluator reads it as the agent's doing).
        assert r.json().get("reason") == ("symlink" if path == "~/link/secret.txt" else None), path
    r = httpx.post(srv.url + "/setup/upload", headers=auth(), data={"file_path": "/tmp/../etc/evil"},
                   files={"file_data": ("f", b"x")})
    assert r.status_code == 403
    r = httpx.post(srv.url + "/list_directory", headers=auth(), json={"path": "/"})
    assert r.status_code == 403
    r = httpx.post(srv.url + "/file", headers=auth(), data={"file_path": "~/x\x00y"})
    assert r.status_code == 400


def test_upload_download_and_list_directory(server):
    srv, home, _ = server
    with SandboxClient(srv.url, TOKEN) as c:
        assert c.upload("~/docs/a.bin", b"\x00\x01payload").startswith("File Uploaded: 9 bytes")
        assert (home / "docs" / "a.bin").read_bytes() == b"\x00\x01payload"
        assert c.download("~/docs/a.bin") == b"\x00\x01payload"
        tree = c.list_directory("~")
        assert tree["type"] == "directory"
        docs = [ch for ch in tree["children"] if ch["name"] == "docs"][0]
        assert docs["children"] == [{"type": "file", "name": "a.bin"}]
        with pytest.raises(SandboxRequestError) as e:
            c.download("~/missing.txt")
        assert e.value.status == 404
    # OSWorld's clients send JSON too.
    r = httpx.post(srv.url + "/file", headers=auth(), json={"file_path": str(home / "docs" / "a.bin")})
    assert r.content == b"\x00\x01payload"


def test_input_route_validates_actions(server):
    srv, _, _ = server
    srv.desktop._screen = (1280, 800)  # no X here: only validation runs
    for actions, fragment in [(None, "non-empty list"), ([{"type": "fly"}], "unknown action type"),
                              ([{"type": "click", "x": 5000, "y": 1}], "out of range"),
                              ([{"type": "type"}], "text"), ([{"type": "key", "keys": ["ctrl", "nokey!!"]}], "unknown key"),
                              ([{"type": "click", "x": 1, "y": 1, "button": "side"}], "button")]:
        r = httpx.post(srv.url + "/input", headers=auth(), json={"actions": actions})
        assert r.status_code == 400, actions
        assert fragment in r.json()["message"]


def test_reset_needs_an_owned_session(server):
    srv, _, _ = server
    r = httpx.post(srv.url + "/reset", headers=auth())
    assert r.status_code == 409


def test_compile_actions_chains_xdotool_and_splits_after_type():
    plan = compile_actions([
        {"type": "click", "x": 10, "y": 20},
        {"type": "type", "text": "hi there"},
        {"type": "key", "keys": ["ctrl", "s"]},
        {"type": "wait", "seconds": 0.1},
        {"type": "scroll", "dy": -3},
        {"type": "drag", "from": [1, 2], "x": 30, "y": 40},
        {"type": "press", "key": "enter", "presses": 2},
    ], (100, 100))
    assert plan[0] == ["mousemove", "10", "20", "mousedown", "1", "mouseup", "1", "sleep", "0.05",
                       "type", "--delay", "4", "--", "hi there"]
    assert compile_actions([{"type": "click", "clicks": 2, "button": "right"}], (100, 100)) == [
        ["mousedown", "3", "mouseup", "3", "sleep", "0.03", "mousedown", "3", "mouseup", "3"]]
    assert plan[1] == ["key", "--clearmodifiers", "ctrl+s"]
    assert plan[2] == 0.1
    assert plan[3] == ["mousedown", "5", "mouseup", "5"] * 3 + [
        "mousemove", "1", "2", "mousedown", "1", "mousemove", "30", "40", "mouseup", "1",
        "sleep", "0.05", "key", "--repeat", "2", "--delay", "20", "Return"]
    assert keysym("Enter") == "Return" and keysym("+") == "plus" and keysym("a") == "a" and keysym("F5") == "F5"
    # "\n" is sent as Return (xdotool types it as Linefeed, which GTK text views ignore)
    assert compile_actions([{"type": "type", "text": "a\nb\n"}], (100, 100)) == [
        ["type", "--delay", "4", "--", "a"], ["key", "Return", "type", "--delay", "4", "--", "b"], ["key", "Return"]]
    with pytest.raises(ActionError):
        compile_actions([{"type": "wait", "seconds": 99}], (100, 100))
    with pytest.raises(ActionError):
        compile_actions([{"type": "move", "x": True, "y": 1}], (100, 100))


def test_client_typed_errors_and_retries(server):
    srv, _, _ = server
    with SandboxClient(srv.url, "wrong") as c, pytest.raises(SandboxAuthError):
        c.platform()
    with SandboxClient(srv.url, TOKEN) as c:
        with pytest.raises(SandboxTimeout):
            c.execute("sleep 5", shell=True, timeout=0.3)
        with pytest.raises(SandboxUnavailable):  # the display is gone: 503 after retries
            c.screenshot()
        res = c.execute(["sh", "-c", "exit 4"])
        assert res.returncode == 4
        from sandboxes.client import SandboxCommandError

        with pytest.raises(SandboxCommandError):
            c.execute(["false"], check=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with SandboxClient(f"http://127.0.0.1:{dead}", TOKEN, retries=2, backoff=0.05) as c, \
            pytest.raises(SandboxUnavailable, match="cannot reach"):
        c.platform()  # gives up after its retries (the test's timeout catches a hang)


def test_concurrent_requests_are_served(server):
    srv, _, _ = server
    results = []

    def call():
        with SandboxClient(srv.url, TOKEN) as c:
            results.append(c.execute("date +%s.%N; sleep 1; date +%s.%N", shell=True).output.split())

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    spans = [(float(a), float(b)) for a, b in results]
    # ran in parallel, not one after another: every command started before any one ended
    assert max(a for a, _ in spans) < min(b for _, b in spans), spans


def test_provider_from_config(monkeypatch):
    from sandboxes.providers import provider_from_config
    from vagen.config.schema import SandboxConfig

    cfg = SandboxConfig(provider="remote", urls=["http://127.0.0.1:1"])
    monkeypatch.delenv("VAGEN_SANDBOX_TOKEN", raising=False)
    with pytest.raises(ValueError, match="VAGEN_SANDBOX_TOKEN"):
        provider_from_config(cfg)
    monkeypatch.setenv("VAGEN_SANDBOX_TOKEN", "t")
    prov = provider_from_config(cfg)
    assert prov.name == "remote" and prov.handles[0].url == "http://127.0.0.1:1"
    with pytest.raises(Exception, match="reset_mode"):
        SandboxConfig(provider="docker", reset_mode="snapshot")


def test_a_sweep_after_stop_spares_the_next_sandbox_on_the_same_display():
    """A display number is reused as soon as a sandbox's Xvfb exits: the sweep of a stopped
    sandbox matches its VAGEN_SANDBOX_ID as well as the display, never its successor's apps."""
    from sandboxes.server.desktop import display_pids, sweep_display

    def spawn(sid: str) -> subprocess.Popen:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DISPLAY": ":987", "VAGEN_SANDBOX_ID": sid}
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)

    old, new = spawn("local-old"), spawn("local-new")
    try:
        deadline = time.monotonic() + 30  # the children's environments appear once they exec
        while not {old.pid, new.pid} <= set(display_pids(":987")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert old.pid in display_pids(":987", "local-old") and new.pid not in display_pids(":987", "local-old")
        assert sweep_display(":987", sandbox_id="local-old") == 1
        assert old.wait(timeout=10) == -9 and new.poll() is None
    finally:
        for p in (old, new):
            p.kill()
            p.wait()
