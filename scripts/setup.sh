#!/usr/bin/env bash
# Everything kafka-chaos needs on a fresh Debian machine, idempotently and quickly when in place:
# Debian packages, a running Docker engine, .venv with the project, the images and the Spark class
# archive.
# Called by `make setup` (and so by `make demo` and `make test`).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. Debian packages (only what is missing; apt-get update only when something is).
missing=()
while read -r pkg cmd _; do
  pkg=${pkg%%#*}
  [ -z "$pkg" ] && continue
  [ -n "${cmd:-}" ] && command -v "$cmd" >/dev/null 2>&1 && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < scripts/apt-packages.txt
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages present"
fi

# 2. A Docker engine that answers (started in the background where no init system runs it).
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd"
  as_root sh -c 'nohup dockerd >/var/log/kchaos-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not come up; see /var/log/kchaos-dockerd.log" >&2; tail -20 /var/log/kchaos-dockerd.log >&2; exit 1; }
fi
log "Docker engine $(docker version --format '{{.Server.Version}}')"

# 3. The Python environment, reinstalled only when its build input (pyproject.toml) changed.
python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "kafka-chaos needs Python 3.11 (found $("$python" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
stamp=.venv/.installed-$(sha256sum <pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  log "creating .venv"
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/pip install --disable-pip-version-check -e '.[dev]' >.venv/pip.log 2>&1 \
    || { tail -30 .venv/pip.log >&2; echo "pip install failed; full log in .venv/pip.log" >&2; exit 1; }
  .venv/bin/python -c 'import contract, harness, faults, checkers, reports, kchaos' # fails loudly if the install did
  rm -f .venv/.installed-*; touch "$stamp"
else
  log ".venv up to date"
fi

# 4. Images: the local JRE base (debootstrap) and the Kafka image, each built only if missing.
log "Kafka image $(.venv/bin/kchaos images build ${KAFKA_DIST:+--kafka "$KAFKA_DIST"} ${BASE_IMAGE:+--base-image "$BASE_IMAGE"})"

# 5. The Spark class archive every check's JVM starts from (built once per Java and Spark version).
# An optimisation only: without it checks work the same, slower to start.
if archive=$(.venv/bin/kchaos spark-archive); then
  log "Spark class archive $archive"
else
  log "Spark class archive could not be built (see above); checks will load Spark's classes instead"
fi

# 6. The Java workload program (clients/java) for the default kafka-clients release, built once per
# source content into the cache (harness/java_client.py); other releases are built when asked for.
java_client=$(.venv/bin/python -m harness.java_client) || exit 2
log "Java client: $java_client"
