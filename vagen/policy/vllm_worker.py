"""Runs inside vLLM's GPU workers (``LLM(worker_extension_cls=...)``): load named tensors sent
by the trainer into the engine's model. Imported by vLLM in its worker processes only."""

from __future__ import annotations


class WeightLoaderExtension:
    """Mixed into vLLM's worker class; called through ``LLM.collective_rpc``."""

    def vagen_load_weights(self, named: list) -> int:
        """``named``: ``[(name, tensor), ...]`` with the trainer's (Hugging Face) names; the
        model's own ``load_weights`` maps them to vLLM's layout (fused QKV, gate/up, ...)."""
        model = self.model_runner.model
        device = next(model.parameters()).device
        model.load_weights(weights=[(name, t.to(device, non_blocking=True)) for name, t in named])
        return len(named)
