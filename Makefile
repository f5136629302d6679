# kafka-chaos: `make demo` and `make test` install everything they need (see scripts/setup.sh).
.PHONY: setup demo test test-fast lint images clean

VENV := .venv/bin
DEMO_DURATION ?= 60

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/kchaos run isolate-leader --duration $(DEMO_DURATION) --out runs; \
	  code=$$?; [ $$code -le 1 ] || exit $$code; \
	  echo "open the report: $$(ls -td runs/*/ | head -1)report/index.html"

test: setup
	$(VENV)/pytest -q

test-fast: setup
	$(VENV)/pytest -q -m "not docker"

lint: setup
	$(VENV)/ruff check harness faults checkers reports tests benchmarks scripts
	$(VENV)/ruff format --check harness faults checkers reports tests benchmarks scripts
	$(VENV)/mypy
	$(VENV)/python scripts/check_layers.py

images: setup
	$(VENV)/kchaos images build

clean:
	-$(VENV)/kchaos cleanup
