"""Typed configs loaded from YAML presets under configs/ plus dotlist overrides."""

from vagen.config.loader import ConfigError, list_presets, load_config, to_yaml, validate
from vagen.config.schema import KINDS, ServeConfig, TrainConfig

__all__ = ["KINDS", "ConfigError", "ServeConfig", "TrainConfig", "list_presets", "load_config", "to_yaml", "validate"]
