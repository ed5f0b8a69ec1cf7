# VAGEN trainer image for GPU hosts: CUDA PyTorch + this repo + the vLLM extra.
#
#   docker build -f dockerfiles/trainer.Dockerfile -t vagen/trainer .
#   docker run --gpus all --ipc host -v $PWD/runs:/work/runs vagen/trainer \
#       vagen train sokoban model.path=Qwen/Qwen2.5-VL-3B-Instruct ...
#
# Needs a registry that serves the CUDA base image (Docker Hub by default). It cannot be
# built on the project's offline development machines (no registry there); it was written
# against the public pytorch/pytorch image layout and is not built in CI.
ARG BASE_IMAGE=pytorch/pytorch:2.9.1-cuda12.8-cudnn9-runtime
FROM ${BASE_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 HF_HOME=/work/hf-cache
RUN apt-get update && apt-get install -y --no-install-recommends git curl && \
    apt-get clean && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/vagen
COPY pyproject.toml README.md ./
COPY vagen/ vagen/
COPY envs/ envs/
COPY sandboxes/ sandboxes/
COPY worldgen/ worldgen/
COPY configs/ configs/
RUN pip install ".[vllm]"
WORKDIR /work
ENV VAGEN_CONFIG_DIR=/opt/vagen/configs
CMD ["vagen", "--help"]
