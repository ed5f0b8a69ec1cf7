"""The `vagen` command line. Only commands that work are listed; later subsystems add theirs."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from sandboxes.cli import sandbox_app
from sandboxes.server.app import is_loopback
from vagen import __version__

app = typer.Typer(help="VAGEN: train and evaluate vision-language-model agents with RL.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
config_app = typer.Typer(help="Show and check typed config presets (configs/<kind>/<name>.yaml).",
                         no_args_is_help=True)
models_app = typer.Typer(help="Build model checkpoints offline.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(models_app, name="models")
app.add_typer(sandbox_app, name="sandbox")
osworld_app = typer.Typer(help="OSWorld tasks: check what this machine can run, list a suite.", no_args_is_help=True)
app.add_typer(osworld_app, name="osworld")
synth_app = typer.Typer(help="Synthesize training data offline (no real software runs).", no_args_is_help=True)
app.add_typer(synth_app, name="synth")

console = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        print(f"vagen {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log at INFO level."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


# -- config ----------------------------------------------------------------------
@config_app.command("show")
def config_show(
    name: str = typer.Argument(..., help="Preset name (train/sokoban) or a path to a YAML file."),
    overrides: list[str] | None = typer.Argument(None, help="Dotlist overrides: algo.advantage=grpo trainer.lr=1e-6"),
) -> None:
    """Print the resolved config (preset + overrides), validated; exits non-zero on any error."""
    from vagen.config import ConfigError, load_config, to_yaml

    try:
        cfg = load_config(name, overrides or [])
    except ConfigError as e:
        _fail(str(e))
    sys.stdout.write(to_yaml(cfg))


@config_app.command("list")
def config_list() -> None:
    """List the available presets."""
    from vagen.config import list_presets

    for name, path in list_presets().items():
        print(f"{name}\t{path}")


# -- models ----------------------------------------------------------------------
@models_app.command("tiny")
def models_tiny(
    out_dir: Path = typer.Argument(..., help="Directory to write the checkpoint to."),
    arch: str = typer.Option("qwen2_5_vl", help="qwen2_5_vl or qwen3_vl."),
    seed: int = typer.Option(0, help="Seed for the tokenizer corpus and the weights."),
) -> None:
    """Write a tiny random Qwen-VL checkpoint (tokenizer, processor, weights), offline."""
    from vagen.models import ARCHES, build_tiny_model

    if arch not in ARCHES:
        _fail(f"unknown --arch {arch!r}; allowed: {', '.join(ARCHES)}")
    if out_dir.exists() and any(out_dir.iterdir()):
        _fail(f"{out_dir} exists and is not empty")
    with console.status(f"building tiny {arch} checkpoint"):
        path = build_tiny_model(out_dir, arch=arch, seed=seed)  # type: ignore[arg-type]
    meta = json.loads((path / "vagen_tiny.json").read_text())
    print(f"wrote tiny {arch} ({meta['parameters']:,} parameters) to {path}")


# -- envs and demonstrations -------------------------------------------------------
# -- eval / leaderboard -----------------------------------------------------------
def _eval_config(suite: str, config: str | None, overrides: list[str]):
    """The train preset of the suite (or ``--config``) with dotlist overrides: it supplies the env
    options, reasoning format, history, reward and sandbox sections."""
    from vagen.config import ConfigError, load_config
    from vagen.config.loader import list_presets
    from vagen.config.schema import TrainConfig

    preset = {"replay": "train/semi-online"}.get(suite, f"train/{suite}")  # suites whose preset has another name
    name = config or (preset if preset in list_presets() else None)
    try:
        if name is not None:
            return load_config(name, overrides)
        if overrides:
            _fail(f"no preset train/{suite} to apply {overrides} to; pass --config")
        return TrainConfig(env={"name": suite})
    except ConfigError as e:
        _fail(str(e))


@app.command("eval")
def eval_cmd(
    suite: str = typer.Argument(..., help="A registered env: osworld (bundled osworld-lite or --tasks DIR), sokoban, "
                                          "frozenlake, ..."),
    policy: str = typer.Option(..., "--policy", help="tiny, hf:<path>, openai:<model>, vllm:<path>, "
                                                      "scripted:oracle|random|noop"),
    max_steps: int = typer.Option(15, "--max-steps", min=1, help="Step budget per episode (15, 50, 100, ...)."),
    num_envs: int = typer.Option(1, "--num-envs", min=1, help="Episodes played in parallel (envs/sandboxes)."),
    seeds: list[str] | None = typer.Option(None, "--seeds", help="Seeds: 0 1 2 or ranges 0-99 (repeatable)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Play at most N episodes of the manifest."),
    out: Path | None = typer.Option(None, "--out", help="Run folder (default runs/eval/<suite>-<policy>-<steps>)."),
    resume: bool = typer.Option(False, "--resume", help="Continue a run in --out: skip finished episodes."),
    tasks: str | None = typer.Option(None, "--tasks", help="osworld: a folder of OSWorld task JSON files."),
    domains: str | None = typer.Option(None, "--domains", help="osworld: comma-separated domains."),
    base_url: str | None = typer.Option(None, "--base-url", help="openai backend: server URL (.../v1)."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="openai backend: env var of the key."),
    config: str | None = typer.Option(None, "--config", help="Preset for env/prompt/sandbox (default train/<suite>)."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="0 = greedy."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", min=1, help="Per response (default: the preset's)."),
    retries: int = typer.Option(2, "--retries", min=0, help="Retries of an episode after an infrastructure failure."),
    label: str | None = typer.Option(None, "--label", help="Name shown on the leaderboard (default: the policy)."),
    screenshots: bool = typer.Option(True, "--screenshots/--no-screenshots", help="Save step PNGs."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    overrides: list[str] | None = typer.Argument(None, help="Config overrides: env.params.observation=image ..."),
) -> None:
    """Play a suite with a policy; writes run.json, results.jsonl and OSWorld-style episode folders.

    Extra arguments are config overrides, e.g. env.params.observation=image prompt.format=no_think."""
    from vagen.eval.runner import EvalError, EvalSettings, run_eval
    from vagen.eval.suites import parse_seeds

    cfg = _eval_config(suite, config, list(overrides or []))
    params = dict(cfg.env.params)
    if tasks is not None:
        if suite != "osworld":
            _fail("--tasks applies to the osworld suite")
        params["tasks"] = tasks
    opts: dict = {}
    if policy.startswith("openai:"):
        opts = {"api_key_env": api_key_env, **({"base_url": base_url} if base_url else {})}
    elif base_url:
        _fail("--base-url applies to openai:<model> policies")
    try:
        seed_list = parse_seeds(seeds)
    except ValueError as e:
        _fail(str(e))
    import re as _re

    out = out or Path("runs/eval") / f"{suite}-{_re.sub(r'[^A-Za-z0-9._-]', '_', policy)}-{max_steps}"
    p, smp = cfg.prompt, cfg.sampling
    settings = EvalSettings(
        suite=suite, policy=policy, out=out, max_steps=max_steps, num_envs=num_envs, seeds=seed_list, limit=limit,
        domains=[d for d in (domains or "").split(",") if d] or None, resume=resume, retries=retries, label=label,
        env_params=params, policy_options=opts, format=p.format, representation=p.representation,
        system_prompt=p.system_prompt, history=p.history, history_k=p.history_k, max_images=p.max_images,
        temperature=temperature, top_p=smp.top_p, max_tokens=max_tokens or smp.max_tokens, stop=tuple(smp.stop),
        sandbox=cfg.sandbox, reward=cfg.reward, save_screenshots=screenshots, progress=progress,
        config_name=config or f"train/{suite}")
    try:
        summary = run_eval(settings)
    except (EvalError, ValueError) as e:
        _fail(str(e))
    print(json.dumps(summary, default=str))


@app.command("leaderboard")
def leaderboard_cmd(
    runs: list[Path] = typer.Argument(..., help="Eval run folders (each with run.json and results.jsonl)."),
    out: Path = typer.Option(..., "--out", help="Writes index.html, leaderboard.csv, leaderboard.md, plots/*.png."),
) -> None:
    """Tables per suite and domain (Wilson 95% CIs, steps, infra errors, tokens, time), step-budget
    columns, the VAGEN average over embodied suites, as Markdown, CSV and a static HTML page."""
    from vagen.eval.leaderboard import LeaderboardError, leaderboard

    try:
        result = leaderboard(runs, out)
    except LeaderboardError as e:
        _fail(str(e))
    print((out / "leaderboard.md").read_text())
    print(json.dumps({"paths": {k: str(v) for k, v in result["paths"].items()}}))


# -- osworld ---------------------------------------------------------------------
@osworld_app.command("check")
def osworld_check(
    tasks: str = typer.Argument(..., help="An OSWorld task JSON file, a folder of them, or a bundled suite "
                                          "(osworld-lite)."),
    cache: list[Path] | None = typer.Option(None, "--cache", help="Extra file-cache folders for `download` steps."),
    probe: bool = typer.Option(False, "--probe", help="Try uncached URLs over the network (off by default)."),
    as_json: bool = typer.Option(False, "--json", help="Print {reports, summary} as JSON."),
) -> None:
    """Report, per task, what it needs that this machine lacks, each item with a kind: needs_network,
    needs_cache, needs_account (the user can supply these), missing_app, unsupported (ours: setup steps,
    getters, metrics or evaluator options we cannot run). Loads every file; never runs a task. Exit 1 if
    a file is invalid."""
    from envs.osworld.check import check_dir, format_report, summary
    from envs.osworld.controller import FileCache

    try:
        reports = check_dir(tasks, FileCache([Path(c) for c in cache or []]), probe=probe)
    except FileNotFoundError as e:
        _fail(str(e))
    if as_json:
        print(json.dumps({"reports": [r.as_dict() for r in reports], "summary": summary(reports)}, indent=2))
    else:
        print(format_report(reports))
    if any(r.status == "invalid" for r in reports):
        raise typer.Exit(1)


@osworld_app.command("list")
def osworld_list(tasks: str = typer.Argument("osworld-lite", help="A bundled suite or a folder of task files.")) -> None:
    """The tasks of a suite: domain, id, feasibility, instruction."""
    from envs.osworld.tasks import TaskFormatError, load_suite

    try:
        suite = load_suite(tasks)
    except (FileNotFoundError, TaskFormatError) as e:
        _fail(str(e))
    for t in suite:
        print(f"{t.domain}\t{t.id}\t{'feasible' if t.feasible else 'infeasible'}\t{t.instruction}")


@app.command("envs")
def envs_list() -> None:
    """List the registered environments."""
    import envs as envs_pkg

    for name, desc in envs_pkg.list_envs().items():
        print(f"{name:<14} {desc}")


def _env_overrides(items: list[str]) -> dict:
    from vagen.config import ConfigError
    from vagen.config.loader import parse_override

    out = {}
    for item in items:
        try:
            path, value = parse_override(item)
        except ConfigError as e:
            _fail(str(e))
        if len(path) != 1:
            _fail(f"env option {item!r} must be a plain key=value")
        out[path[0]] = value
    return out


@app.command("demos")
def demos(
    env: str = typer.Argument(..., help="Env name (see `vagen envs`)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (samples.jsonl, images/, manifest.json)."),
    n: int = typer.Option(100, "--n", min=1, help="Number of trajectories."),
    fmt: str = typer.Option("grounding_worldmodeling", "--format", help="Reasoning format."),
    representation: str = typer.Option("structured", help="Belief representation: natural, symbolic, structured."),
    seed_start: int = typer.Option(0, help="First seed; trajectories use seed_start .. seed_start+n-1."),
    system_prompt: str = typer.Option("full", help="full, or minimal (action help + format only)."),
    options: list[str] | None = typer.Argument(None, help="Env options as key=value, e.g. dim_room=[6,6] observation=text"),
) -> None:
    """Write solver demonstrations as chat-format SFT samples (JSONL + PNG)."""
    from vagen.demos import write_demos

    env_cfg = _env_overrides(options or [])
    try:
        summary = write_demos(env, n, out, format=fmt, representation=representation, env_config=env_cfg,
                              seed_start=seed_start, system_prompt=system_prompt)
    except ValueError as e:
        _fail(str(e))
    print(json.dumps(summary))


# -- training ----------------------------------------------------------------------
def _split_preset(overrides: list[str]) -> tuple[str | None, list[str]]:
    preset, rest = None, []
    for o in overrides:
        if o.startswith("preset="):
            preset = o.split("=", 1)[1]
        else:
            rest.append(o)
    return preset, rest


@app.command("train", context_settings={"allow_extra_args": True})
def train(
    env: str = typer.Argument(..., help="Env preset: configs/train/<env>.yaml (preset=demo uses <env>-demo.yaml)."),
    overrides: list[str] | None = typer.Argument(None, help="Dotlist overrides, e.g. algo.advantage=grpo trainer.steps=50"),
) -> None:
    """Train a policy with RL on an env (rollouts -> filter -> advantages -> PPO)."""
    from vagen.config import ConfigError, load_config, to_yaml

    preset, rest = _split_preset(overrides or [])
    name = f"train/{env}-{preset}" if preset else f"train/{env}"
    # `data=DIR` is shorthand for the replay env's data folder (vagen train semi-online data=DIR)
    rest = [f"env.params.{o}" if o.startswith("data=") else o for o in rest]
    try:
        cfg = load_config(name, rest)
    except ConfigError as e:
        _fail(str(e))
    import envs as envs_pkg

    if cfg.env.name not in envs_pkg.list_envs():
        _fail(f"env {cfg.env.name!r} is not available yet; registered: {', '.join(envs_pkg.list_envs())}")
    from vagen.train.plots import plot_run
    from vagen.train.rl import RLTrainer

    main_rank = int(os.environ.get("RANK", "0")) == 0  # under torchrun only rank 0 reports
    if main_rank:
        console.print(f"[bold]vagen train[/] {name} -> {cfg.trainer.out_dir}")
        console.print(to_yaml(cfg), highlight=False, markup=False)
    try:
        trainer = RLTrainer(cfg)
    except ValueError as e:
        _fail(str(e))
    summary = trainer.run()
    if main_rank:
        plot_run(cfg.trainer.out_dir)
        print(json.dumps(summary))


@app.command("sft", context_settings={"allow_extra_args": True})
def sft(
    overrides: list[str] | None = typer.Argument(None, help="Dotlist overrides: data=DIR model.path=tiny steps=300 ..."),
    config: str = typer.Option("sft/default", "--config", help="SFT preset or YAML path."),
) -> None:
    """Supervised fine-tuning on chat-format demonstrations (loss on assistant tokens)."""
    from vagen.config import ConfigError, load_config
    from vagen.train.sft import SFTDataError, run_sft

    try:
        cfg = load_config(config, overrides or [])
        summary = run_sft(cfg)
    except (ConfigError, SFTDataError) as e:
        _fail(str(e))
    print(json.dumps(summary))


@synth_app.command("gui")
def synth_gui(
    n: int = typer.Option(200, "--n", min=1, help="Kept step samples to write (whole trajectories)."),
    backend: str = typer.Option("html", help="World model: html (exact, Chromium) or diffusion."),
    seed: int = typer.Option(0, help="Scenes, tasks and plans derive from it."),
    out: Path = typer.Option(Path("data/synth-gui"), help="Output directory."),
    infeasible_p: float = typer.Option(0.05, min=0.0, max=1.0, help="Share of infeasible tasks (plan: fail)."),
    pipeline: str = typer.Option("StableDiffusionInstructPix2PixPipeline",
                                 help="diffusion: a diffusers image-edit pipeline class (e.g. FluxKontextPipeline)."),
    model_path: str = typer.Option("tiny", help="diffusion: the pipeline's from_pretrained path (tiny: offline random)."),
    steps: int = typer.Option(20, min=1, help="diffusion: inference steps per edit."),
    size: int = typer.Option(512, min=32, help="diffusion: long side of the image the pipeline edits."),
    initial: str = typer.Option("html", help="diffusion: first frame from the html render or text2image."),
    t2i_pipeline: str = typer.Option("StableDiffusionPipeline",
                                     help="diffusion, --initial text2image: a diffusers text-to-image pipeline class."),
    t2i_model_path: str = typer.Option("tiny", help="diffusion, --initial text2image: its from_pretrained path."),
    task_model: str = typer.Option(None, help="A policy spec (openai:<model>, hf:<path>, tiny, scripted:...) "
                                              "that writes the tasks (needs --planner-model)."),
    planner_model: str = typer.Option(None, help="A policy spec that plans the tasks (plans are checked by "
                                                 "simulation; default: the template planner)."),
    grounder_model: str = typer.Option(None, help="diffusion: a VLM policy spec that boxes targets on generated frames."),
    judge_model: str = typer.Option(None, help="diffusion: a VLM policy spec that confirms each edit's consequence."),
) -> None:
    """Synthetic GUI trajectories: scene spec -> task -> plan -> frames -> grounded, filtered steps."""
    from rich.progress import Progress

    if backend not in ("html", "diffusion"):
        _fail(f"backend must be html or diffusion, got {backend!r}")
    from vagen.policy import PolicyError
    from worldgen.diffusion import DiffusionConfig
    from worldgen.llm import ModelRoles
    from worldgen.synth import synth

    try:
        dcfg = DiffusionConfig(pipeline=pipeline, model_path=model_path, steps=steps, size=size, initial=initial,
                               t2i_pipeline=t2i_pipeline, t2i_model_path=t2i_model_path)
    except ValueError as e:
        _fail(str(e))
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("synthesizing steps", total=n)
        try:
            report = synth(n, out, seed=seed, backend=backend, infeasible_p=infeasible_p,
                           diffusion=dcfg if backend == "diffusion" else None,
                           progress=lambda k: bar.advance(task, k),
                           models=ModelRoles(tasks=task_model, planner=planner_model, grounder=grounder_model,
                                             judge=judge_model))
        except (ValueError, OSError, PolicyError) as e:
            _fail(str(e))
    print(json.dumps(report))


@app.command("plot")
def plot(run_dir: Path = typer.Argument(..., help="A run directory holding metrics.jsonl.")) -> None:
    """Write PNG learning curves for a run under RUN_DIR/plots."""
    from vagen.train.plots import plot_run

    if not (run_dir / "metrics.jsonl").is_file():
        _fail(f"{run_dir}/metrics.jsonl not found")
    for p in plot_run(run_dir):
        print(p)


# -- chat ------------------------------------------------------------------------
@app.command("chat")
def chat(
    prompt: str = typer.Argument(..., help="The user message."),
    model: str = typer.Option("tiny", "--model", "-m", help="Policy spec: tiny, hf:<path>, openai:<model>, vllm:<path>, scripted:<name>."),
    image: list[Path] | None = typer.Option(None, "--image", "-i", help="Image file(s) to attach, in order."),
    base_url: str | None = typer.Option(None, help="Server URL for openai:<model> (default $OPENAI_BASE_URL)."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", help="Env var holding the API key for openai:<model>."),
    max_tokens: int = typer.Option(64, min=1),
    temperature: float = typer.Option(1.0, min=0.0),
    top_p: float = typer.Option(1.0, min=0.0, max=1.0),
    seed: int | None = typer.Option(None),
    as_json: bool = typer.Option(False, "--json", help="Print the whole Generation as JSON."),
) -> None:
    """Send one chat (text + images) to any policy and print the answer."""
    from dataclasses import asdict

    from PIL import Image, UnidentifiedImageError

    from vagen.policy import PolicyError, SamplingParams, make_policy, parse_policy_spec

    parts: list[dict] = []
    for p in image or []:
        try:
            parts.append({"type": "image", "image": Image.open(p).convert("RGB")})
        except (OSError, UnidentifiedImageError) as e:
            _fail(f"cannot read image {p}: {e}")
    parts.append({"type": "text", "text": prompt})
    try:
        backend, _ = parse_policy_spec(model)
        opts = {"base_url": base_url, "api_key_env": api_key_env} if backend == "openai" else {}
        sampling = SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
        with console.status(f"loading {model}"):
            policy = make_policy(model, **opts)
        with policy:
            gen = policy.generate([[{"role": "user", "content": parts}]], sampling)[0]
    except (ValueError, PolicyError) as e:
        _fail(str(e))
    print(json.dumps(asdict(gen)) if as_json else gen.text)


# -- serve -----------------------------------------------------------------------
@app.command("serve")
def serve(
    model: str = typer.Option("tiny", "--model", "-m", help="Policy spec to serve (tiny, hf:<path>, vllm:<path>, ...)."),
    host: str = typer.Option("127.0.0.1", help="Bind address; loopback unless you also set an API key."),
    port: int = typer.Option(8000, min=0, max=65535),
    served_name: str | None = typer.Option(None, help="Model id clients send (default: the spec)."),
    api_key_env: str = typer.Option("VAGEN_API_KEY", help="Env var whose value clients must send as a Bearer token."),
    max_tokens_limit: int = typer.Option(1024, min=1, help="Largest max_tokens a request may ask for."),
    device: str = typer.Option("auto", help="hf backend device: auto, cpu, cuda[:N]."),
    dtype: str = typer.Option("auto", help="hf backend dtype: auto, float32, bfloat16, float16."),
) -> None:
    """Serve a policy behind an OpenAI-compatible /v1/chat/completions API."""
    import uvicorn

    from vagen.policy import PolicyError, make_policy, parse_policy_spec
    from vagen.serve import create_app

    api_key = os.environ.get(api_key_env) or None
    if not is_loopback(host) and api_key is None:
        _fail(f"refusing to bind {host} without an API key: set ${api_key_env} or bind 127.0.0.1")
    try:
        backend, _ = parse_policy_spec(model)
        opts = {"device": device, "dtype": dtype} if backend == "hf" else {}
        with console.status(f"loading {model}"):
            policy = make_policy(model, **opts)
    except (ValueError, PolicyError, OSError) as e:
        _fail(str(e))
    name = served_name or model
    console.print(f"serving {name!r} on http://{host}:{port}/v1 (auth: {'on' if api_key else 'off'})")
    uvicorn.run(create_app(policy, name, api_key=api_key, max_tokens_limit=max_tokens_limit),
                host=host, port=port, log_level="warning")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
