# Two commands for a fresh machine (see README.md):
#   make demo   set up, then run the main job on the embedded default (tiny model, no GPU/Docker)
#   make test   set up, then run every test tier but `gpu`
.PHONY: setup demo test lint clean

setup:
	bash scripts/setup.sh

demo: setup
	bash scripts/demo.sh

test: setup
	bash scripts/test.sh

lint: setup
	.venv/bin/ruff check vagen envs sandboxes worldgen tests benchmarks

clean:
	rm -rf .venv .demo .pytest_cache .ruff_cache .hypothesis
