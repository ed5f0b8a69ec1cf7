"""Load presets and dotlist overrides into typed configs, failing early and clearly.

``load_config("train/sokoban", ["algo.advantage=grpo", "trainer.lr=1e-6"])`` reads
``configs/train/sokoban.yaml``, applies the overrides, resolves ``${a.b}``
interpolations, and validates the result against ``TrainConfig``. Any problem raises
``ConfigError`` naming the dotted key and what is allowed.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from vagen.config.schema import KINDS, Section


class ConfigError(ValueError):
    """A config problem a user can fix; the message names the key."""


def config_dirs() -> list[Path]:
    """Where presets are looked up, in order: $VAGEN_CONFIG_DIR, ./configs, the repo's configs/."""
    dirs = []
    if os.environ.get("VAGEN_CONFIG_DIR"):
        dirs.append(Path(os.environ["VAGEN_CONFIG_DIR"]))
    dirs.append(Path.cwd() / "configs")
    dirs.append(Path(__file__).resolve().parents[2] / "configs")
    seen, out = set(), []
    for d in dirs:
        if d.resolve() not in seen and d.is_dir():
            seen.add(d.resolve())
            out.append(d)
    return out


def list_presets() -> dict[str, Path]:
    """All presets by name (``train/sokoban``), first directory wins."""
    found: dict[str, Path] = {}
    for d in config_dirs():
        for p in sorted(d.glob("*/*.yaml")):
            found.setdefault(f"{p.parent.name}/{p.stem}", p)
    return found


def find_preset(name: str) -> tuple[str, Path]:
    """Resolve a preset name or a YAML path to ``(kind, path)``."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        kind = path.parent.name
        if kind not in KINDS:
            raise ConfigError(f"{name}: cannot tell the config kind from folder {kind!r}; "
                              f"put it under one of: {', '.join(KINDS)}/")
        return kind, path
    presets = list_presets()
    if name in presets:
        return name.split("/", 1)[0], presets[name]
    hint = difflib.get_close_matches(name, list(presets), n=1)
    raise ConfigError(f"no preset {name!r}" + (f"; did you mean {hint[0]!r}?" if hint else "")
                      + f" (available: {', '.join(presets) or 'none'}; searched {', '.join(map(str, config_dirs()))})")


def parse_override(item: str) -> tuple[list[str], Any]:
    """``a.b=1e-6`` -> (["a", "b"], 1e-06). Values are YAML; numbers like 1e-6 are floats."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", key):
        raise ConfigError(f"bad override {item!r}: expected key.path=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as e:
        raise ConfigError(f"bad value in override {item!r}: {e}") from None
    if isinstance(value, str):
        # YAML 1.1 reads 1e-6 as a string; users mean a number.
        try:
            value = float(value) if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+", value) else value
        except ValueError:
            pass
    return key.split("."), value


def apply_overrides(data: dict, overrides: list[str], schema: type[BaseModel]) -> dict:
    """Set each dotted key in ``data``, checking the path exists in the schema first."""
    for item in overrides:
        path, value = parse_override(item)
        _check_path(schema, path)
        node = data
        for part in path[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = {}
                node[part] = nxt
            node = nxt
        node[path[-1]] = value
    return data


def _check_path(schema: type[BaseModel], path: list[str]) -> None:
    model: Any = schema
    for i, part in enumerate(path):
        if model is None:
            return  # inside a free-form mapping (e.g. env.params): any key is fine
        fields = model.model_fields
        if part not in fields:
            prefix = ".".join(path[:i])
            raise ConfigError(_unknown_key_message(".".join(path[: i + 1]), part, list(fields), prefix))
        ann = fields[part].annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def _unknown_key_message(dotted: str, part: str, allowed: list[str], prefix: str) -> str:
    hint = difflib.get_close_matches(part, allowed, n=1)
    where = f" in {prefix}" if prefix else ""
    return (f"unknown config key {dotted!r}{where}"
            + (f"; did you mean {hint[0]!r}?" if hint else "")
            + f" (allowed: {', '.join(allowed)})")


_INTERP = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\}")


def _resolve_interpolations(data: dict) -> dict:
    """Replace ``${a.b}`` inside strings with the value at that dotted path."""

    def lookup(path: str, seen: tuple[str, ...]) -> Any:
        if path in seen:
            raise ConfigError(f"interpolation cycle: {' -> '.join(seen + (path,))}")
        node: Any = data
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(f"interpolation ${{{path}}} names a key that is not set")
            node = node[part]
        return walk(node, seen + (path,))

    def walk(node: Any, seen: tuple[str, ...] = ()) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, seen) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, seen) for v in node]
        if isinstance(node, str):
            whole = _INTERP.fullmatch(node)
            if whole:
                return lookup(whole.group(1), seen)
            return _INTERP.sub(lambda m: str(lookup(m.group(1), seen)), node)
        return node

    return walk(data)


def _defaults(schema: type[BaseModel]) -> dict:
    """The schema's default values as plain data; required fields are left out."""
    out: dict[str, Any] = {}
    for name, field in schema.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out[name] = _defaults(ann)
        elif not field.is_required():
            value = field.get_default(call_default_factory=True)
            out[name] = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return out


def _check_required(schema: type[BaseModel], data: Any, prefix: str = "") -> None:
    """Report missing required keys before interpolation can trip over them."""
    if not isinstance(data, dict):
        return  # the validator reports the wrong type with its own message
    for name, field in schema.model_fields.items():
        ann = field.annotation
        if field.is_required() and name not in data:
            raise ConfigError(f"missing required config key {prefix + name!r}")
        if isinstance(ann, type) and issubclass(ann, BaseModel) and name in data:
            _check_required(ann, data[name], f"{prefix}{name}.")


def _deep_merge(base: dict, top: dict) -> dict:
    out = dict(base)
    for k, v in top.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _format_validation_error(err: ValidationError, schema: type[BaseModel]) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        if e["type"] == "extra_forbidden":
            parent: Any = schema
            for part in e["loc"][:-1]:
                ann = parent.model_fields[part].annotation if parent and part in parent.model_fields else None
                parent = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
            allowed = list(parent.model_fields) if parent else []
            prefix = ".".join(str(x) for x in e["loc"][:-1])
            lines.append(_unknown_key_message(loc, str(e["loc"][-1]), allowed, prefix))
        elif e["type"] == "missing":
            lines.append(f"missing required config key {loc!r}")
        else:
            lines.append(f"invalid value for {loc!r}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join(lines)


def validate(kind: str, data: dict) -> Section:
    """Validate a plain dict as config ``kind``; raise ``ConfigError`` on any problem."""
    if kind not in KINDS:
        raise ConfigError(f"unknown config kind {kind!r}; allowed: {', '.join(KINDS)}")
    schema = KINDS[kind]
    try:
        # Interpolations may name defaults too (out_dir: runs/${env.name}), so resolve
        # over the preset laid on top of the schema's defaults.
        _check_required(schema, data)
        return schema.model_validate(_resolve_interpolations(_deep_merge(_defaults(schema), data)))
    except ValidationError as e:
        raise ConfigError(_format_validation_error(e, schema)) from None


def load_config(name: str, overrides: list[str] | None = None) -> Section:
    """Load preset ``name`` (``train/sokoban`` or a YAML path) with dotlist overrides."""
    kind, path = find_preset(name)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a preset must be a mapping of sections, got {type(data).__name__}")
    data = apply_overrides(data, list(overrides or []), KINDS[kind])
    return validate(kind, data)


def to_yaml(cfg: Section) -> str:
    """The resolved config as YAML, in schema order."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False, default_flow_style=False)
