"""The SparkSession the checkers run on: local[*] by default, a real cluster with --master.

The JVM's own stdout and stderr go to a log file, never to the user's terminal: Spark's startup
chatter and Java stack traces are not messages for the person running `kchaos check`. Errors that
matter are translated into HarnessError by `spark_errors`.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from py4j.java_gateway import JavaGateway, JavaObject  # type: ignore[import-untyped]
from py4j.protocol import Py4JError, Py4JJavaError  # type: ignore[import-untyped]
from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkException
from pyspark.java_gateway import launch_gateway
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers import class_archive
from checkers.jvm_view import KeptLookupsView
from contract.errors import ConfigError, EnvironmentError_, SparkError
from contract.limits import brief

DEFAULT_MASTER = "local[*]"
DRIVER_MEMORY_ENV = "KCHAOS_SPARK_DRIVER_MEMORY"
DEFAULT_DRIVER_MEMORY = "4g"
LOCAL_SHUFFLE_PARTITIONS = 8
QUICK_START_BYTES = 256 * 1024 * 1024
"""Below this much history, a local check compiles with the JIT's quick tier only (C1): the
optimizing tier costs more than it saves on short jobs (a 170k-event run re-checks in 32 s instead
of 41 s, 1M events first-check in 59 s instead of 68 s), while larger histories need its speed."""
QUICK_TIER_ONLY = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
"""The quick tier alone, with the code cache the JVM gives both tiers by default: alone it gets 48 MB,
which one 170k-event check fills to 36 MB; a process that checks more histories then filled it and
the JVM stopped compiling ("CodeCache is full"): further 170k-event checks took 10-11.8 s, 8.9-9.5 s
with this (6 checks in one process, twice each, alternated)."""
TINY_HISTORY_BYTES = 1024 * 1024
"""Below this much history (a few thousand events), a check's expressions are evaluated, not compiled
to Java classes, and its shuffles have one partition: compiling and scheduling cost more than they
save on so few rows (a 60-event history, the whole cold check: 8.8-9.3 s -> 7.6-8.1 s, alternated 3
times)."""
OPTIMIZE_HOT_ONLY = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=20000"
    " -XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=400000"
)
"""Locally above QUICK_START_BYTES, only methods run ten times as often as the JVM's default asks for are
compiled by the optimizing tier: on two cores its compiler thread competes with the tasks, and
most of what it compiled by default ran too briefly to pay back (10M-event first check: 49-52 s
of C2 compilation, 70.8/72.8 s wall; with this 35-36 s and 69.7/69.6 s, alternated)."""
CODEGEN_CACHE_ENTRIES = 2000
"""How many compiled query classes the JVM keeps (Spark's default: 100). A check generates more than
100, so by default each further check in a process compiled most of its classes again (Janino, with
its class lookups in every jar: a fifth of a warm check's samples in a JFR profile); further checks
of a 170,000-event history took 7.2-7.7 s with the default, 6.0-7.2 s with this (5 checks per
process, alternated twice)."""
OBJECT_HASH_KEYS = 65_536
HEAP_PAGES = 2048
"""A local check's tasks take their hash maps' and sorts' memory in pages of its heap over this (2 MB
for the default 4g), not in Spark's default for such a heap on two cores (64 MB): each of a check's
aggregating or sorting tasks took at least one such page, a fresh array the JVM zeroes and puts
straight in the old generation, which then filled and was collected whole. Further checks of a real
60-s run (4 in each process; 4 processes with the default, 2 with 2 MB pages, alternated): garbage
collection paused each 0.14-0.88 s with the default, 0.04-0.38 s with 2 MB, and each took 3.8-4.9 s
against 3.4-4.3 s; cold `kchaos check`, 5 pairs: median 10.0 s against 9.2 s. Level at 10M events
(first checks 46.6 and 44.8 s against 45.7 and 44.0 s). Scaled with the heap, as a task holds at
most 8192 pages."""
THROUGHPUT_GC = "-XX:+UseParallelGC"
"""A local check's JVM collects garbage with the throughput collector, not the default G1: G1's
write barriers and concurrent marking threads compete with the two task threads of a small machine
(a 10M-event first check: 80.5/81.4/80.5 s with G1, 70.1/77.5/74.9 s with this, alternated)."""
_LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


def spark_log_path() -> Path:
    """Where the JVM of this process writes its output (one file per checking process)."""
    return Path(tempfile.gettempdir()) / f"kchaos-spark-{os.getpid()}.log"


def _conf(
    master: str, app_name: str, shuffle_partitions: int | None, history_bytes: int | None = None
) -> SparkConf:
    # Spark's own jars are trusted: verifying ~10k of their classes at start costs seconds (17 s ->
    # 13 s to a first job here). Ignored, not fatal, on a JVM that drops the flag.
    java_options = (
        f"-Dlog4j2.configurationFile=file:{_LOG4J_CONFIG}"
        " -XX:+IgnoreUnrecognizedVMOptions -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"
    )
    local = master.startswith("local")
    # A local driver runs the tasks too: its JVM is tuned for them (measured on two cores).
    local_tuning = (
        [THROUGHPUT_GC, QUICK_TIER_ONLY if _is_short(history_bytes) else OPTIMIZE_HOT_ONLY] if local else []
    )
    driver_options = " ".join(filter(None, [java_options, *local_tuning, class_archive.driver_options()]))
    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName(app_name)
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.driver.extraJavaOptions", driver_options)
        .set("spark.executor.extraJavaOptions", java_options)
        .set("spark.sql.session.timeZone", "UTC")
        # The histories are our only input; Hive and ANSI failures on casts are not wanted here.
        .set("spark.sql.catalogImplementation", "in-memory")
        .set("spark.sql.ansi.enabled", "false")
        # A check runs its independent parts side by side, each in its own scheduler pool
        # (`submit_part`): FAIR between them, so the part made of many short jobs is not queued
        # behind another's long tasks (10M-event first checks, alternated: 4 of 4 faster, 1.5-10 s).
        .set("spark.scheduler.mode", "FAIR")
        # Per-second latency percentiles keep one digest per (acks mode, second): thousands of keys.
        # Past this many keys in one task, Spark would sort every row instead of hashing it.
        .set("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(OBJECT_HASH_KEYS))
        # The largest aggregation, per value, has mostly unique keys: Spark's small first-level hash
        # map in front of the real one fills at once, after which every row probes both (10M-event
        # first checks, alternated 8 times each: mean 85.6 s without it, 91.8 s with; in one warm
        # JVM that aggregation alone took 7% less CPU).
        .set("spark.sql.codegen.aggregate.map.twolevel.enabled", "false")
        .set("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES))
        # PySpark records the Python call site of every DataFrame function for its error messages:
        # five or so JVM round trips and a walk of the Python stack per call, thousands per check
        # (a 60-event check: cold 5.0-5.2 -> 4.5-4.7 s, further 2.3-2.7 -> 1.9-2.2 s; 170,000
        # events, further 6.2-7.0 -> 5.3-6.1 s). `spark_errors` reports the JVM's cause, not it.
        .set("spark.python.sql.dataFrameDebugging.enabled", "false")
    )
    if local:
        # A few hundred MB per run on a laptop: the default 200 shuffle partitions only add overhead.
        conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions or LOCAL_SHUFFLE_PARTITIONS))
        # With few shuffle partitions there is little for adaptive execution to coalesce, and it
        # plans each of a check's many small queries stage by stage (10M-event first checks,
        # alternated: 3 of 3 faster without it, by 3.5-4.7 s). A cluster keeps it.
        conf.set("spark.sql.adaptive.enabled", "false")
        memory = _driver_memory()
        conf.set("spark.driver.memory", memory)
        conf.set("spark.buffer.pageSize", page_size(memory))
    elif shuffle_partitions:
        conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    return conf


_MEMORY_SIZE = re.compile(r"([1-9][0-9]{0,9})([kmgt])", re.IGNORECASE)
"""A heap size with its unit: without one, the JVM would read bytes where Spark reads MiB."""
_MIB_PER_UNIT = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
MIN_DRIVER_MIB = 1024
"""Spark refuses a heap under about 450 MB; a check wants more than that anyway."""


def _mib(memory: str) -> float | None:
    """A heap size in MiB; None unless it is a number with its unit (`_MEMORY_SIZE`)."""
    size = _MEMORY_SIZE.fullmatch(memory)
    return None if size is None else int(size[1]) * _MIB_PER_UNIT[size[2].lower()]


def _driver_memory() -> str:
    """A local check's JVM heap: $KCHAOS_SPARK_DRIVER_MEMORY (a JVM size such as 4g), else 4g."""
    value = os.environ.get(DRIVER_MEMORY_ENV, "").strip() or DEFAULT_DRIVER_MEMORY
    mib = _mib(value)
    if mib is None or mib < MIN_DRIVER_MIB:
        raise ConfigError(
            f"{DRIVER_MEMORY_ENV}={brief(value)}: expected a JVM memory size of at least 1g, with its"
            " unit, such as 4g or 2048m"
        )
    return value


def page_size(memory: str) -> str:
    """Spark's memory page for a local heap of `memory` (as `_driver_memory` takes it): the heap over
    HEAP_PAGES, a power of two from 1 MB to Spark's largest, 64 MB."""
    heap_mib = _mib(memory)
    assert heap_mib is not None, memory  # `_driver_memory` takes no other
    page_mib = 1
    while page_mib * HEAP_PAGES < heap_mib and page_mib < 64:
        page_mib *= 2
    return f"{page_mib}m"


def _is_short(history_bytes: int | None) -> bool:
    return history_bytes is not None and history_bytes < QUICK_START_BYTES


_session: SparkSession | None = None
_starting = threading.Lock()
_background: threading.Thread | None = None


def _running_session() -> SparkSession | None:
    """The process's session if it is started and not stopped."""
    return _session if _session is not None and _session.sparkContext._jsc is not None else None


def get_spark(
    master: str | None = None,
    app_name: str = "kchaos-check",
    shuffle_partitions: int | None = None,
    history_bytes: int | None = None,
) -> SparkSession:
    """Return the process's one SparkSession, starting it (quietly) on first use, from any thread.

    `history_bytes`, the size of the history about to be checked, tunes a local JVM for it.
    """
    global _session
    with _starting:  # a session started in the background (`start_in_background`) is waited for
        session = _session = (
            _running_session()
            or SparkSession.getActiveSession()
            or _start(master or DEFAULT_MASTER, app_name, shuffle_partitions, history_bytes)
        )
    if threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        # SparkContext's own SIGINT handler calls into the JVM from inside the very call it
        # interrupts, which fails; ours cancels the jobs from another thread instead.
        signal.signal(signal.SIGINT, partial(_cancel_and_interrupt, session.sparkContext))
    return session


def start_in_background(master: str | None, history_bytes: int) -> None:
    """Start the session (and run a first query) in a daemon thread, for a check that comes later;
    nothing if it runs already.

    What fails here is not reported: the check's own `get_spark` starts it again and says why.
    """
    global _background
    if (_background is not None and _background.is_alive()) or _running_session():
        return

    def start() -> None:
        with suppress(Exception):
            get_spark(master, history_bytes=history_bytes).range(1).count()

    _background = threading.Thread(target=start, name="kchaos-spark-start", daemon=True)
    _background.start()


def _start(
    master: str, app_name: str, shuffle_partitions: int | None, history_bytes: int | None
) -> SparkSession:
    if master.startswith("local"):
        # Avoids the "hostname resolves to a loopback address" warning and binding to a public NIC.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = _conf(master, app_name, shuffle_partitions, history_bytes)
    log_path = spark_log_path()
    on_interrupt = signal.getsignal(signal.SIGINT)
    try:
        with log_path.open("ab") as log:
            gateway = _launch_gateway(conf, log)
        context = SparkContext(conf=conf, gateway=gateway)
        SparkContext._jvm = KeptLookupsView(gateway.jvm)  # before SparkSession copies it
    except Exception as exc:  # Spark reports a missing Java or a bad master in many shapes
        raise EnvironmentError_(
            f"could not start Spark with master {master!r}: {_first_line(exc)} (Spark log: {log_path})"
        ) from None
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_interrupt)  # SparkContext replaced it; `get_spark` sets ours
    # py4j logs an interrupted call's traceback, and a connection broken by the interrupt, through
    # the root logger and its own: not for the user's terminal (errors reach it as SparkError).
    logging.getLogger().addFilter(_not_from_py4j)
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    context.setLogLevel("ERROR")
    return SparkSession(context)


def size_for(spark: SparkSession, history_bytes: int) -> None:
    """Set the SQL settings that depend on the size of the history about to be checked.

    Set again for every check: one process (a matrix, `kchaos check A B`, a test session) checks
    histories of any size on its one session. Locally, a shuffle has one partition per core up to
    QUICK_START_BYTES of history (LOCAL_SHUFFLE_PARTITIONS above), and one below TINY_HISTORY_BYTES.
    """
    tiny = history_bytes < TINY_HISTORY_BYTES
    context = spark.sparkContext
    if str(context.master).startswith("local"):
        if tiny:
            partitions = 1
        elif _is_short(history_bytes):
            partitions = context.defaultParallelism
        else:
            partitions = LOCAL_SHUFFLE_PARTITIONS
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    spark.conf.set("spark.sql.codegen.wholeStage", str(not tiny).lower())
    spark.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN" if tiny else "FALLBACK")


def empty_frame(spark: SparkSession, schema: T.StructType) -> DataFrame:
    """A frame of no rows of `schema`, planned as literals: `createDataFrame` would parallelize an
    empty Python list as a Python RDD, whose first task starts Python workers (a cold check of a
    145,000-event run spent about a second on them)."""
    return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])


def kept(frame: DataFrame) -> DataFrame:
    """`frame`, computed once by its first action and kept, for the few rows a check reads again.

    A local checkpoint, not `persist`: the frames built on it then carry a one-node plan instead of
    the whole plan behind it, which Spark analyzes and matches against its cache for every frame
    built on it (details of a 170k-event history's reordered examples: 1.2-1.4 s -> 0.4 s).
    Released by `kept_until_done`.
    """
    return frame.localCheckpoint(eager=False)


@contextmanager
def kept_until_done(context: SparkContext) -> Iterator[None]:
    """Release, when the block ends however it ends, what was kept or persisted within it (one check:
    a process that checks many histories keeps none of their frames). A process checks one history
    at a time: what another check kept meanwhile would be released too."""
    before = _ids(context._jsc.getPersistentRDDs())
    try:
        yield
    finally:
        with suppress(Exception):  # the JVM may already be going away
            persistent = context._jsc.getPersistentRDDs()
            for rdd_id in _ids(persistent) - before:
                persistent.get(rdd_id).unpersist(False)


def _ids(persistent: JavaObject) -> set[int]:
    """The keys of a Java map of persisted RDDs, as one array: py4j's view of the map made about 80
    calls to the JVM to list even an empty one (0.06-0.08 s, twice per check)."""
    return set(persistent.keySet().toArray())


def stop_spark(wait_s: float) -> None:
    """Stop the process's SparkSession and wait up to `wait_s` for its JVM to exit normally.

    The JVM exits when its stdin closes; exiting normally is what lets it write a class archive.
    """
    global _session
    with _starting:
        active, _session = _session or SparkSession.getActiveSession(), None
    if active is None:
        return
    gateway = active.sparkContext._gateway
    active.stop()
    process = getattr(gateway, "proc", None)
    if process is not None and process.stdin is not None:
        process.stdin.close()
        if process.wait(timeout=wait_s) != 0:
            raise EnvironmentError_(f"the Spark JVM exited with status {process.returncode}")


def _cancel_and_interrupt(context: SparkContext, signum: int, frame: FrameType | None) -> None:
    """Ctrl-C: cancel the running Spark jobs (so threads waiting on them end too) and interrupt."""
    threading.Thread(target=_cancel_all_jobs, args=(context,), name="kchaos-cancel", daemon=True).start()
    raise KeyboardInterrupt


def _cancel_all_jobs(context: SparkContext) -> None:
    with suppress(Exception):  # the JVM may already be going away
        context.cancelAllJobs()


def _not_from_py4j(record: logging.LogRecord) -> bool:
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def _launch_gateway(conf: SparkConf, log: object) -> JavaGateway:
    return launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})  # type: ignore[no-untyped-call]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


@contextmanager
def spark_errors(what: str, path: str | None = None) -> Iterator[None]:
    """Turn Spark and Py4J failures while doing `what` into one clear SparkError line."""
    try:
        yield
    except (PySparkException, Py4JError) as exc:
        raise SparkError(f"{what} failed: {_spark_reason(exc)}", path) from None


def _spark_reason(exc: BaseException) -> str:
    if isinstance(exc, Py4JJavaError):
        cause = exc.java_exception
        # The innermost cause names the real problem (a missing file, a bad path), not the job.
        while cause.getCause() is not None:
            cause = cause.getCause()
        return str(cause.getMessage() or cause.getClass().getSimpleName()).splitlines()[0][:300]
    return _first_line(exc)


_T = TypeVar("_T")


def submit_part(
    pool: ThreadPoolExecutor,
    context: SparkContext,
    scheduler_pool: str,
    work: Callable[..., _T],
    *args: Any,
) -> Future[_T]:
    """Run `work` in `pool`, its jobs on `context` in the FAIR scheduler's pool `scheduler_pool` (see
    `checkers.session`): parts of a check submitted side by side share the cores, so a part made of
    many small jobs is not queued behind the long tasks of another."""

    def run() -> _T:
        context.setLocalProperty("spark.scheduler.pool", scheduler_pool)
        return work(*args)

    return pool.submit(run)
