# Two commands for a fresh machine (see README.md):
#   make demo   set up, then run the main job on the embedded default (tiny model, no GPU/Docker)
#   make test   set up, then run every test tier but `gpu`
# For contributors:
#   make ci     what CI does, on a fresh clone of HEAD; writes .ci/last-run (run it before submitting)
#   make bench  the learning benchmarks moved out of CI (figures, tens of minutes)
.PHONY: setup demo test ci bench lint clean

setup:
	bash scripts/setup.sh

demo: setup
	bash scripts/demo.sh

test:
	bash scripts/test.sh

ci:
	bash scripts/ci.sh

bench: setup
	.venv/bin/python -m pytest benchmarks/learning -s -p no:cacheprovider

lint: setup
	.venv/bin/ruff check vagen envs sandboxes worldgen tests benchmarks

clean:
	rm -rf .venv .demo .pytest_cache .ruff_cache .hypothesis
