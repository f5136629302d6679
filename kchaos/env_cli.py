"""`kchaos doctor`, `kchaos cleanup` and `kchaos images build`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable

import pyspark
import typer
from rich.text import Text

from checkers.class_archive import archive_path, is_complete
from contract.errors import ClusterError, HarnessError
from faults import host_kernel_capabilities
from harness import docker_env
from harness.images import LOCAL_BASE_IMAGE, KafkaDistribution, ensure_kafka_image
from harness.lossy import mounts as lossy_mounts
from kchaos import options
from kchaos.console import make_console

console = make_console()
images_app = typer.Typer(help="Build the Kafka image.", no_args_is_help=True)


def doctor() -> None:
    """Check the Docker engine, images, Java and Spark, and say what to do about what is missing (exit 2)."""
    problems = 0

    def report(ok: bool, what: str, detail: str, fix: str = "") -> None:
        nonlocal problems
        problems += not ok
        mark = Text("ok  ", style="green") if ok else Text("MISSING", style="red")
        # Not wrapped at the console's width: one line per check, whole, for grep and copy.
        fix_line = f"\n        -> {fix}" if fix and not ok else ""
        console.print(mark, f"{what}: {detail}{fix_line}", soft_wrap=True)

    try:
        version = docker_env.client().version().get("Version", "?")
        report(True, "Docker engine", f"version {version}")
        images = {tag for image in docker_env.client().images.list() for tag in image.tags}
        kafka_images = sorted(t for t in images if t.startswith("kchaos/kafka:"))
        report(
            LOCAL_BASE_IMAGE in images or any("jre" in t for t in images),
            "base image",
            LOCAL_BASE_IMAGE if LOCAL_BASE_IMAGE in images else "none",
            "run `make setup` (or `make images`)",
        )
        report(
            bool(kafka_images),
            "Kafka images",
            ", ".join(kafka_images) or "none",
            "run `kchaos images build` (or `make images`)",
        )
        if kafka_images:
            _report_kernel(report, kafka_images[-1])
    except HarnessError as exc:
        report(False, "Docker engine", str(exc), "run `make setup`, which installs and starts one")
    java = shutil.which("java")
    java_version = (
        (subprocess.run([java, "-version"], capture_output=True, text=True).stderr.splitlines() or ["?"])[0]
        if java
        else "not found"
    )
    report(java is not None, "Java (for Spark)", java_version, "apt-get install openjdk-17-jre-headless")
    report(True, "PySpark", pyspark.__version__)
    archive = archive_path()
    present = archive is not None and is_complete(archive)
    report(
        present,
        "Spark class archive (faster checks)",
        str(archive) if present else "none",
        "run `kchaos spark-archive` (`make setup` does)",
    )
    report(
        shutil.which("mvn") is not None,
        "Maven (resolves Kafka releases from Maven Central)",
        shutil.which("mvn") or "not found",
        "apt-get install maven",
    )
    raise typer.Exit(2 if problems else 0)  # something missing: nothing could be judged, no verdict


def _report_kernel(report: Callable[[bool, str, str, str], None], image: str) -> None:
    """What the kernel lets containers do for link faults, probed in a scratch container of `image`."""
    try:
        caps = host_kernel_capabilities(image)
    except HarnessError as exc:
        report(False, "kernel (link faults)", str(exc), "see `docker info`; `make setup` restarts the engine")
        return
    detail = caps.offered()
    if caps.tbf and not caps.netem:
        detail += " -> `slow` limits bandwidth only, no delay or jitter"
        detail += " (for those: `modprobe sch_netem` on the host)"
    report(
        caps.tbf and caps.statistic,
        "kernel (link faults)",
        detail,
        "`slow` needs the tbf qdisc and `lossy` the iptables statistic match: use a kernel with both",
    )


def cleanup(
    run_id: str = typer.Option(
        None, "--run", help="Only this run id, removed whether its containers still run or not."
    ),
    remove_live: bool = typer.Option(
        False, "--all", help="Also remove runs with running or paused containers (live clusters)."
    ),
) -> None:
    """Remove containers and networks labelled kchaos.run that killed runs left behind.

    Without --run it lists every run and removes those with no running or paused container (exited
    leftovers, networks alone); a live run (a cluster from `kchaos cluster up`, a run in progress)
    is left unless --all is given or, on a terminal, you answer yes. Every removal is tried; those
    that fail are reported together at the end (exit 2).
    """
    runs = docker_env.labelled_runs(run_id)
    live = [run for run in runs if run.live and run_id is None]
    if live and not remove_live and sys.stdin.isatty():
        for run in live:
            console.print(f"live: {run.run_id}  {run.describe()}")
        remove_live = typer.confirm(f"Remove these {len(live)} live runs too (their clusters stop)?")
    left = [] if remove_live else live
    left_ids = {run.run_id for run in left}
    removed: list[docker_env.Removed] = []
    for run in runs:
        if run.run_id in left_ids:
            console.print(f"left    {run.run_id}  {run.describe()}: live (running or paused)")
        else:
            console.print(f"remove  {run.run_id}  {run.describe()}")
            removed.append(docker_env.remove_run(run))
    containers = [name for r in removed for name in r.containers]
    networks = [name for r in removed for name in r.networks]
    console.print(f"removed {len(containers)} containers, {len(networks)} networks")
    for name in containers + networks:
        console.print(f"  {name}")
    if left:
        console.print(
            f"left {len(left)} live runs: `kchaos cluster down RUN_ID` or `kchaos cleanup --all` removes them"
        )
    failures = [line for r in removed for line in r.failures]
    # Lossy disks of runs Docker holds nothing of (a run killed while it started): those of --run,
    # else only those whose daemons are gone (a live one may be a cluster still starting).
    listed = {run.run_id for run in runs}
    for leftover in lossy_mounts.leftover_runs():
        if leftover not in listed and (
            leftover == run_id or (run_id is None and not lossy_mounts.serving(leftover))
        ):
            try:
                unmounted = lossy_mounts.remove_run(leftover)
            except ClusterError as exc:
                failures.append(str(exc))
            else:
                console.print(f"removed the lossy disks of {leftover}: {len(unmounted)} were mounted")
    if failures:
        raise ClusterError("; ".join(failures))


@images_app.command("build")
def build_image(
    kafka: str = typer.Option(None, "--kafka", help=options.KAFKA_OPTION_HELP),
    base_image: str = typer.Option(
        LOCAL_BASE_IMAGE,
        "--base-image",
        help="Base image with a Java runtime, e.g. "
        "eclipse-temurin:17-jre where a registry answers (default: built locally).",
    ),
) -> None:
    """Build (or find) the kchaos/kafka image for a Kafka distribution; print its tag."""
    image = ensure_kafka_image(KafkaDistribution.locate(kafka), base_image)
    console.print(image.tag)


def register(app: typer.Typer) -> None:
    app.command()(doctor)
    app.command()(cleanup)
    app.add_typer(images_app, name="images")
