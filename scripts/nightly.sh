#!/usr/bin/env bash
# The nightly chaos job's two steps (docs/CI.md), the same on every CI system and on a laptop:
#
#   scripts/nightly.sh run KAFKA CLIENT OUT    one cell of the release x client matrix: the nightly
#                                              scenarios x seeds into OUT/<run>/, each checked and
#                                              reported (report/junit.xml is the CI's test report);
#                                              the exit code is kchaos's: 0 every promise held, 1 a
#                                              promise broke, 2 or 3 no verdict (input, machine, bug)
#   scripts/nightly.sh index HISTORY TONIGHT   carry tonight's runs (every run directory below
#                                              TONIGHT) into HISTORY, slimmed to what the index and
#                                              the reports need, drop runs older than KEEP_DAYS, and
#                                              write HISTORY/index.html: trends across nights
#
# Settings (environment): SCENARIOS (comma-separated, default below), SEEDS (default 1), DURATION
# (seconds, default: each scenario's own), KEEP_DAYS (default 30), KCHAOS (default .venv/bin/kchaos).
set -uo pipefail
cd "$(dirname "$0")/.."

KCHAOS=${KCHAOS:-.venv/bin/kchaos}
SCENARIOS=${SCENARIOS:-txn-coordinator-failover,txn-late-endtxn,consumer-crash,coordinator-failover}
SEEDS=${SEEDS:-1}
KEEP_DAYS=${KEEP_DAYS:-30}

usage() { sed -n '2,13p' "$0" >&2; exit 2; }

run() {
  local kafka=$1 client=$2 out=$3
  local duration=()
  [ -n "${DURATION:-}" ] && duration=(--duration "$DURATION")
  "$KCHAOS" run "$SCENARIOS" --kafka "$kafka" --client "$client" --seeds "$SEEDS" "${duration[@]}" \
    --out "$out" --budget 36000
}

# What the index and each run's report need of a run directory: its run.json and scenario, its
# check and report, and the small history files the report draws (faults, cluster samples). The
# history of writes and reads stays in tonight's artifacts. Times are kept: a report newer than its
# check is not rendered again.
slim_copy() {
  local run=$1 kept=$2 name
  mkdir -p "$kept/history" || return 2
  for name in run.json scenario.yaml history/faults.jsonl history/cluster.jsonl; do
    if [ -f "$run/$name" ]; then cp -p "$run/$name" "$kept/$name" || return 2; fi
  done
  for name in check report; do
    if [ -d "$run/$name" ]; then rm -rf -- "${kept:?}/$name" && cp -pR "$run/$name" "$kept/$name" || return 2; fi
  done
}

index() {
  local history=$1 tonight=$2
  mkdir -p "$history" || return 2
  local run
  # Tonight's run directories, wherever the CI system unpacked them below TONIGHT.
  while IFS= read -r run; do
    slim_copy "$run" "$history/$(basename "$run")" || return 2
  done < <(find "$tonight" -name run.json -printf '%h\n' | sort -u)
  # Run directories are named <UTC date>-<time>-<scenario>-<suffix>: older than KEEP_DAYS go.
  local cutoff
  cutoff=$(date -u -d "-${KEEP_DAYS} days" +%Y%m%d) || return 2
  for run in "$history"/*/; do
    local day
    day=$(basename "$run" | cut -c1-8)
    [[ $day =~ ^[0-9]{8}$ && $day < $cutoff ]] && rm -rf -- "$run"
  done
  "$KCHAOS" report --index "$history"
}

case "${1:-}" in
  run) [ $# -eq 4 ] || usage; run "$2" "$3" "$4" ;;
  index) [ $# -eq 3 ] || usage; index "$2" "$3" ;;
  *) usage ;;
esac
