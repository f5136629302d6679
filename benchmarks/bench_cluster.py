"""Benchmark: Kafka image build time (cold and warm) and `kchaos cluster smoke` wall time.

Printed, not asserted (a failed build or smoke run still exits 1):

(a) Cold Kafka image build: a copy of the default distribution with one extra file under config/
    (so the content tag differs and the COPY layer cannot come from Docker's cache) is built with
    `ensure_kafka_image` on the existing base image; that image is removed afterwards. Then a warm
    `ensure_kafka_image` of the default distribution (cache hit: hashing the inputs, one lookup).
(b) `kchaos cluster smoke` as a user runs it (`.venv/bin/kchaos cluster smoke`), twice, against the
    target of 60 s once images exist.
(c) With --cold-base only: the local debootstrap base image (~3 min), built under a throwaway tag
    and removed afterwards; the project's base image is never touched.

    .venv/bin/python benchmarks/bench_cluster.py [--smoke-runs N] [--cold-base]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docker.errors import DockerException

from harness import docker_env
from harness.images import (
    LOCAL_BASE_IMAGE,
    LOCAL_BASE_SCRIPT,
    KafkaDistribution,
    ensure_kafka_image,
)

REPO = Path(__file__).resolve().parents[1]
KCHAOS = REPO / ".venv" / "bin" / "kchaos"
SMOKE_TARGET_S = 60.0


def remove_image(tag: str) -> None:
    try:
        docker_env.client().images.remove(tag, force=True)
    except DockerException as exc:  # a leftover image is reported, not fatal
        print(f"  (could not remove {tag}: {exc})")


def bench_kafka_image() -> None:
    print("== Kafka image build (on the existing base image)")
    dist = KafkaDistribution.locate()
    with tempfile.TemporaryDirectory(prefix="kchaos-bench-dist-") as tmp:
        copy = Path(tmp) / "kafka"
        shutil.copytree(dist.root, copy)
        nonce = os.urandom(6).hex()
        (copy / "config" / f"kchaos-bench-{nonce}.txt").write_text(f"benchmark build {nonce}\n")
        fresh = KafkaDistribution.from_directory(copy)
        started = time.monotonic()
        image = ensure_kafka_image(fresh, LOCAL_BASE_IMAGE)
        cold = time.monotonic() - started
    try:
        size_mb = docker_env.client().images.get(image.tag).attrs["Size"] / 1e6
        print(
            f"  cold build:  {cold:6.1f} s  ({image.tag}, Kafka {image.kafka_version}, {size_mb:.0f} MB, "
            f"{len(image.config_keys)} broker config keys)"
        )
    finally:
        remove_image(image.tag)

    started = time.monotonic()
    warm_image = ensure_kafka_image(KafkaDistribution.locate(), LOCAL_BASE_IMAGE)
    warm = time.monotonic() - started
    print(f"  warm (cache hit): {warm:6.2f} s  ({warm_image.tag})")
    print(f"  cold / warm: {cold / warm:.0f}x")


def bench_smoke(runs: int) -> bool:
    print(f"== `kchaos cluster smoke` wall time (target: under {SMOKE_TARGET_S:.0f} s)")
    ok = True
    times: list[float] = []
    for run in range(1, runs + 1):
        started = time.monotonic()
        result = subprocess.run([str(KCHAOS), "cluster", "smoke"], capture_output=True, text=True, cwd=REPO)
        wall = time.monotonic() - started
        times.append(wall)
        summary = next(
            (line for line in result.stdout.splitlines() if line.startswith("sent ")), "no summary line"
        )
        verdict = "under target" if wall < SMOKE_TARGET_S else "OVER TARGET"
        print(f"  run {run}: {wall:5.1f} s  exit {result.returncode}  {verdict}  | {summary}")
        if result.returncode != 0:
            ok = False
            print(f"    stderr tail:\n{result.stderr[-1500:]}")
    if times:
        print(f"  best {min(times):.1f} s, worst {max(times):.1f} s")
    return ok


def bench_cold_base() -> bool:
    print("== Local base image (debootstrap + docker import), under a throwaway tag")
    tag = f"kchaos/base-jre:bench-{os.urandom(4).hex()}"
    started = time.monotonic()
    result = subprocess.run(["bash", str(LOCAL_BASE_SCRIPT), tag], capture_output=True, text=True)
    took = time.monotonic() - started
    if result.returncode != 0:
        print(f"  failed after {took:.0f} s:\n{result.stderr[-1500:]}")
        return False
    print(f"  cold base build: {took:6.1f} s  ({tag})")
    remove_image(tag)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke-runs", type=int, default=2)
    parser.add_argument("--cold-base", action="store_true", help="also time the local base image (~3 min)")
    args = parser.parse_args()
    running = docker_env.client().containers.list(filters={"label": docker_env.RUN_LABEL})
    others = len({c.labels[docker_env.RUN_LABEL] for c in running})
    print(f"machine: {os.cpu_count()} cores; kchaos clusters running now: {others}")
    ok = True
    if args.cold_base:
        ok = bench_cold_base() and ok
    bench_kafka_image()
    ok = bench_smoke(args.smoke_runs) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
