import ast
import importlib
import re
import sys
import tomllib
from pathlib import Path

from tests.conftest import REPO, run_cli


def test_four_import_packages_and_console_script():
    for name in ("vagen", "envs", "sandboxes", "worldgen"):
        assert importlib.import_module(name).__doc__
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["vagen"] == "vagen.cli:main"
    assert set(meta["project"]["optional-dependencies"]) >= {"dev", "vllm"}


def test_dependency_ranges_admit_vllm_pins():
    """vLLM pins torch 2.14.0 and transformers < 5.23: our ranges must admit both."""
    from packaging.requirements import Requirement

    deps = {Requirement(d).name: Requirement(d) for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]}
    assert deps["torch"].specifier.contains("2.14.0") and deps["torch"].specifier.contains("2.14.1")
    assert deps["transformers"].specifier.contains("5.20.2") and deps["transformers"].specifier.contains("5.24.0")


def test_envs_never_imports_vagen():
    for path in (REPO / "envs").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            assert not any(n == "vagen" or n.startswith("vagen.") for n in names), f"{path} imports vagen"


def test_importing_vagen_policy_does_not_import_heavy_backends():
    import subprocess

    code = "import vagen.policy, vagen.policy.vllm, vagen.config, sys; print('vllm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_help_lists_only_working_commands():
    r = run_cli("--help")
    assert r.returncode == 0
    listed = set(re.findall(r"│ (\w+)\s{2,}", r.stdout))
    assert listed == {"chat", "serve", "config", "models", "envs", "demos", "train", "sft", "plot", "sandbox", "osworld", "eval", "leaderboard", "synth"}, listed


def test_version():
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("vagen ")


def test_no_weights_tracked_in_git():
    import subprocess

    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split()
    assert not [f for f in files if Path(f).suffix in {".safetensors", ".bin", ".pt", ".ckpt", ".onnx"}]
