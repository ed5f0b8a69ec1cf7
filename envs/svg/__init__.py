"""SVG reconstruction env: write SVG code that reproduces a target image (procedural icons or a folder)."""

from envs.svg.env import SVGConfig, SVGEnv
from envs.svg.icons import KINDS, generate_icon
from envs.svg.render import SVGError, prepare_svg, render_svg
from envs.svg.similarity import edge_similarity, load_learned_metric, pixel_similarity, similarity, ssim

__all__ = ["KINDS", "SVGConfig", "SVGEnv", "SVGError", "edge_similarity", "generate_icon", "load_learned_metric",
           "pixel_similarity", "prepare_svg", "render_svg", "similarity", "ssim"]
