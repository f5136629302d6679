# kafka-chaos: `make demo` and `make test` install everything they need (see scripts/setup.sh).
.PHONY: setup demo test test-fast lint images clean releases findings-power-loss

VENV := .venv/bin
DEMO_DURATION ?= 60

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/kchaos run isolate-leader --duration $(DEMO_DURATION) --out runs; \
	  code=$$?; [ $$code -le 1 ] || exit $$code; \
	  echo "open the report: $$(ls -td runs/*/ | head -1)report/index.html"

test: setup
	$(VENV)/pytest -q --durations=25

test-fast: setup
	$(VENV)/pytest -q -m "not docker"

lint: setup
	$(VENV)/ruff check contract harness faults checkers reports kchaos tests benchmarks scripts
	$(VENV)/ruff format --check contract harness faults checkers reports kchaos tests benchmarks scripts
	$(VENV)/mypy
	$(VENV)/python scripts/check_layers.py

# The nightly version matrix: each release of scripts/nightly-releases.txt x the scenarios whose
# verdicts differ by release x 5 seeds, each with its own acks modes, then runs/releases/index.html
# with its release tables. 4.x runs hw-truncation's KRaft copy (4.0 removed a setting it uses).
# The exit code is the worst run's: 1 when a promise broke somewhere.
RELEASES := $(shell grep -v '^\#' scripts/nightly-releases.txt)
ZK_RELEASES := $(shell echo $(filter-out 4.%,$(RELEASES)) | tr ' ' ',')
KRAFT_RELEASES := $(shell echo $(filter 4.%,$(RELEASES)) | tr ' ' ',')
RELEASE_SEEDS ?= 1,2,3,4,5
releases: setup
	$(VENV)/kchaos run hw-truncation,isolate-leader,power-loss --kafka $(ZK_RELEASES) \
	  --seeds $(RELEASE_SEEDS) --out runs/releases --budget 36000; a=$$?; \
	$(VENV)/kchaos run docs/findings/hw-truncation-kraft.yaml,isolate-leader,power-loss \
	  --kafka $(KRAFT_RELEASES) --seeds $(RELEASE_SEEDS) --out runs/releases --budget 36000; b=$$?; \
	exit $$(( a > b ? a : b ))

images: setup
	$(VENV)/kchaos images build

clean:
	-$(VENV)/kchaos cleanup

# Power loss on the lossy disk (issue 66): every replica (without and with an fsync per message),
# one leader, one follower, a KRaft majority of three controllers, on 3.9.2 and 4.1.1; ELR off on
# 4.1.1 (the built-in power-loss runs 4.1.1 with ELR on, its default for a new cluster). Several
# seeds each, one run at a time. The exit code is the worst run's.
POWER_LOSS_RELEASES ?= 3.9.2,4.1.1
POWER_LOSS_SEEDS ?= 1,2,3
POWER_LOSS_OUT ?= runs/power-loss
findings-power-loss: setup
	$(VENV)/kchaos run power-loss,docs/findings/power-loss-fsync.yaml,docs/findings/power-loss-leader.yaml,docs/findings/power-loss-follower.yaml,docs/findings/power-loss-kraft-majority.yaml \
	  --kafka $(POWER_LOSS_RELEASES) --seeds $(POWER_LOSS_SEEDS) --out $(POWER_LOSS_OUT) --budget 36000; a=$$?; \
	$(VENV)/kchaos run docs/findings/power-loss-without-elr.yaml --kafka 4.1.1 --seeds $(POWER_LOSS_SEEDS) \
	  --out $(POWER_LOSS_OUT) --budget 36000; b=$$?; \
	exit $$(( a > b ? a : b ))
