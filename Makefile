# kafka-chaos: `make demo` and `make test` install everything they need (see scripts/setup.sh).
.PHONY: setup demo test test-fast clients-test lint images clean releases clients findings-power-loss findings-disk-failure

VENV := .venv/bin
DEMO_DURATION ?= 60

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/kchaos run isolate-leader --duration $(DEMO_DURATION) --out runs; \
	  code=$$?; [ $$code -le 1 ] || exit $$code; \
	  echo "open the report: $$(ls -td runs/*/ | head -1)report/index.html"

# The `clients` tests (the client axis's longer real-cluster tests) run in `make clients-test`:
# `make test` is near its 40 minutes.
test: setup
	$(VENV)/pytest -q --durations=25 -m "not clients"

test-fast: setup
	$(VENV)/pytest -q -m "not docker"

# The client axis's real-cluster tests beyond make test's one (issue 67): a night of the nightly
# recipe on mixed clients and the KIP-848 coordinator target, on 4.1.1.
clients-test: setup
	$(VENV)/pytest -q --durations=0 -m clients

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

# The client matrix (issue 67): both clients (librdkafka, and the Java client at the brokers'
# release) x the newest 3.x and 4.x releases of scripts/nightly-releases.txt x the transaction and
# consumer-group scenarios, the groups' also with KIP-848's protocol on 4.x, then
# runs/clients/index.html with its tables by release and client. The exit code is the worst run's.
CLIENT_RELEASES ?= $(lastword $(filter-out 4.%,$(RELEASES))),$(lastword $(RELEASES))
CLIENT_SEEDS ?= 1,2
CLIENT_SCENARIOS ?= txn-coordinator-failover,txn-late-endtxn,txn-pipeline,consumer-crash,coordinator-failover,zombie-consumer
KIP848_SCENARIOS ?= docs/findings/consumer-crash-kip848.yaml,docs/findings/coordinator-failover-kip848.yaml,docs/findings/zombie-consumer-kip848.yaml
CLIENTS_OUT ?= runs/clients
clients: setup
	$(VENV)/kchaos run $(CLIENT_SCENARIOS) --kafka $(CLIENT_RELEASES) --client librdkafka,java \
	  --seeds $(CLIENT_SEEDS) --out $(CLIENTS_OUT) --budget 36000; a=$$?; \
	$(VENV)/kchaos run $(KIP848_SCENARIOS) --kafka $(lastword $(RELEASES)) --client librdkafka,java \
	  --seeds $(CLIENT_SEEDS) --out $(CLIENTS_OUT) --budget 36000; b=$$?; \
	exit $$(( a > b ? a : b ))

images: setup
	$(VENV)/kchaos images build

clean:
	-$(VENV)/kchaos cleanup

# Power loss on the lossy disk (issue 66): every replica (without and with an fsync per message),
# one leader, one follower, a KRaft majority of three controllers, on 3.9.2 (ZooKeeper) and 4.1.1
# (KRaft); ELR off on 4.1.1 (the built-in power-loss runs 4.1.1 with ELR on, its default for a new
# cluster). On KRaft the -at-32s copies: at 12 s a power loss on a fast machine comes within 30 s
# of the nodes' format and meets the format bug (docs/FINDINGS.md), which `power-loss` and
# power-loss-without-elr.yaml, kept at 12 s like their bundled runs, can meet too. Several seeds
# each, one run at a time. The exit code is the worst run's.
POWER_LOSS_SEEDS ?= 1,2,3,4,5
POWER_LOSS_OUT ?= runs/power-loss
FINDINGS_DIR := docs/findings
findings-power-loss: setup
	$(VENV)/kchaos run power-loss,$(FINDINGS_DIR)/power-loss-fsync.yaml,$(FINDINGS_DIR)/power-loss-leader.yaml,$(FINDINGS_DIR)/power-loss-follower.yaml \
	  --kafka 3.9.2 --seeds $(POWER_LOSS_SEEDS) --out $(POWER_LOSS_OUT) --budget 36000; a=$$?; \
	$(VENV)/kchaos run power-loss,$(FINDINGS_DIR)/power-loss-without-elr.yaml,$(FINDINGS_DIR)/power-loss-fsync-at-32s.yaml,$(FINDINGS_DIR)/power-loss-leader-at-32s.yaml,$(FINDINGS_DIR)/power-loss-follower-at-32s.yaml,$(FINDINGS_DIR)/power-loss-kraft-majority-at-32s.yaml \
	  --kafka 4.1.1 --seeds $(POWER_LOSS_SEEDS) --out $(POWER_LOSS_OUT) --budget 36000; b=$$?; \
	$(VENV)/kchaos run $(FINDINGS_DIR)/power-loss-kraft-majority-at-32s.yaml --kafka 3.9.2 --seeds $(POWER_LOSS_SEEDS) \
	  --out $(POWER_LOSS_OUT) --budget 36000; c=$$?; \
	exit $$(( a > b ? (a > c ? a : c) : (b > c ? b : c) ))

# A failed disk (issue 66): fsync-error, then disk-full, on the lossy disk, on a release of each
# line from 0.9 to 4.x; the broker must leave the ISR (failed-disk-leaves-isr). One run at a time.
DISK_FAILURE_RELEASES ?= 0.9.0.1,2.8.2,3.9.2,4.1.1
DISK_FAILURE_SEEDS ?= 1,2,3,4,5
findings-disk-failure: setup
	$(VENV)/kchaos run disk-failure --kafka $(DISK_FAILURE_RELEASES) --seeds $(DISK_FAILURE_SEEDS) \
	  --out runs/disk-failure --budget 36000
