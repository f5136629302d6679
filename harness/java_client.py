"""The Java workload program (clients/java, docs/CLIENTS.md), built for one kafka-clients release.

`build` compiles the program's sources against `org.apache.kafka:kafka-clients:<version>` from Maven
Central with the machine's Maven and JDK (17 or later), runs its unit tests (the exception mapping,
against that release's classes), and keeps the program's jar and every runtime jar in the cache,
keyed by the version and a hash of the sources: a second build of the same sources asks Maven
nothing. Maven runs offline first (`-o`: everything may already be in ~/.m2) and online only when it
lacks something. A build is written whole or not at all.

`JavaClient.command` is how the conductor starts a process of it: the command, to which the
process's spec (one JSON argument) is appended.

    python -m harness.java_client [VERSION]    build (the default: DEFAULT_CLIENT_VERSION)
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from contract.errors import ConfigError, EnvironmentError_, HarnessError
from harness.images import DEFAULT_KAFKA_VERSION, cache_dir
from harness.maven_release import is_version

SOURCES = Path(__file__).resolve().parents[1] / "clients" / "java"
"""The program's Maven project."""
DEFAULT_CLIENT_VERSION = DEFAULT_KAFKA_VERSION
"""The kafka-clients release a Java process runs when none is named: the default broker's."""
MAIN_CLASS = "kchaos.Main"
JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC")
"""A workload process's JVM: small and single-collector, as several run beside the brokers."""
BUILD_TIMEOUT_S = 900
"""A first build fetches kafka-clients, Maven's plugins and JUnit (~30 MB); a stuck one must end."""
MIN_JAVA = 17
CLIENT_GROUP = "org.apache.kafka"
_BUILT = ".built"
"""Written last into a build's directory: its absence means an interrupted build."""
_OFFLINE_MISS = re.compile(r"offline mode|has not been downloaded from it before", re.IGNORECASE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_JAVA_VERSION = re.compile(r'version "(\d+)')


@dataclass(frozen=True)
class JavaClient:
    """A built program: its directory in the cache (lib/ holds every jar) and the release it was
    built against."""

    version: str
    root: Path

    @property
    def command(self) -> list[str]:
        """The command that starts a workload process of it; its spec (one JSON argument) follows."""
        return [str(java()), *JVM_OPTIONS, "-cp", str(self.root / "lib" / "*"), MAIN_CLASS]


def source_digest(sources: Path = SOURCES) -> str:
    """A hash of what the build reads: pom.xml and every file under src/ (its README and Maven's
    output are left out), each file's path and content."""
    files = [sources / "pom.xml", *(p for p in (sources / "src").rglob("*") if p.is_file())]
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.relative_to(sources).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_dir(version: str, digest: str, cache: Path) -> Path:
    """Where the program built from sources of `digest` against kafka-clients `version` is kept."""
    return cache / "java-client" / f"{version}-{digest}"


def java() -> Path:
    """The JDK's java (on PATH, symbolic links resolved); EnvironmentError_ without one."""
    found = shutil.which("java")
    if found is None:
        raise EnvironmentError_("Java (java) is needed to run the Java client; run `make setup`")
    return Path(found).resolve()


def build(
    version: str = DEFAULT_CLIENT_VERSION, cache: Path | None = None, sources: Path = SOURCES
) -> JavaClient:
    """The program built against kafka-clients `version`, from the cache or built now.

    ConfigError when Maven Central has no such release or the program does not build against it;
    EnvironmentError_ when Maven or a JDK is missing, or Maven fails otherwise."""
    if not is_version(version):
        raise ConfigError(f"{version!r} is not a kafka-clients release number (like 3.9.2 or 4.1.1)")
    target = build_dir(version, source_digest(sources), cache if cache is not None else cache_dir())
    if (target / _BUILT).is_file():
        return JavaClient(version, target)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentError_(
            f"Maven (mvn) is needed to build the Java client for kafka-clients {version}; run `make setup`"
        )
    java_home = _jdk_home()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        project = staging / "project"
        shutil.copytree(sources, project, ignore=shutil.ignore_patterns("target", ".*"))
        command = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(project / "pom.xml")]
        command += [f"-Dkafka.clients.version={version}", "package"]
        env = {**os.environ, "JAVA_HOME": str(java_home)}
        done = _maven([*command[:1], "-o", *command[1:]], env, version)
        if done.returncode != 0 and _OFFLINE_MISS.search(done.stdout + done.stderr):
            done = _maven(command, env, version)  # ~/.m2 lacks something: fetch it
        if done.returncode != 0:
            raise _build_failure(version, done.stdout + done.stderr)
        built = staging / "built"
        shutil.move(project / "target" / "lib", built / "lib")
        shutil.move(project / "target" / "kchaos-client.jar", built / "lib" / "kchaos-client.jar")
        (built / _BUILT).write_text(f"{CLIENT_GROUP}:kafka-clients:{version}\n")
        return JavaClient(version, _kept(built, target))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _kept(built: Path, target: Path) -> Path:
    """Move a finished build to `target` (another process's finished build there wins), and remove
    the builds of the same version from older sources."""
    if not (target / _BUILT).is_file():
        shutil.rmtree(target, ignore_errors=True)  # an interrupted build's leftovers
        try:
            built.rename(target)
        except OSError as exc:
            if not (target / _BUILT).is_file():
                raise EnvironmentError_(
                    f"cannot keep the Java client in the cache at {target}: {exc.strerror}"
                ) from None
    version = target.name.rsplit("-", 1)[0]
    for old in target.parent.glob(f"{version}-*"):
        if old != target and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return target


def _jdk_home() -> Path:
    """The home of the JDK whose java is on PATH, checked to be MIN_JAVA or later and to compile."""
    executable = java()
    done = subprocess.run([str(executable), "-version"], capture_output=True, text=True, check=False)
    found = _JAVA_VERSION.search(done.stderr)
    if found is None or int(found.group(1)) < MIN_JAVA:
        said = done.stderr.strip().splitlines()[0] if done.stderr.strip() else "no version"
        raise EnvironmentError_(f"the Java client needs Java {MIN_JAVA} or later; {executable} is {said}")
    home = executable.parent.parent
    if not (home / "bin" / "javac").exists():
        raise EnvironmentError_(
            f"the Java client is compiled with javac, which {home} lacks (a JRE, not a JDK)"
        )
    return home


def _maven(command: list[str], env: dict[str, str], version: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=BUILD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise EnvironmentError_(
            f"Maven did not build the Java client for kafka-clients {version} within {BUILD_TIMEOUT_S} s"
        ) from None


def _build_failure(version: str, output: str) -> HarnessError:
    """One line for a failed build: a release Maven Central does not have, a release the program does
    not compile against (or whose unit tests fail), or Maven's own first error."""
    output = _ANSI.sub("", output)
    coordinates = f"{CLIENT_GROUP}:kafka-clients:{version}"
    if f"{CLIENT_GROUP}:kafka-clients:jar:{version}" in output:
        return ConfigError(
            f"kafka-clients {version}: Maven Central has no {coordinates}; "
            "is it a released version (e.g. 3.9.2, 4.1.1)?"
        )
    errors = [line.removeprefix("[ERROR] ").strip() for line in output.splitlines() if "[ERROR]" in line]
    # after Maven's heading of a compilation failure, the compiler's own first error
    first = next(
        (line for line in errors if line and not line.startswith("COMPILATION ERROR")),
        output.strip()[-300:] or "no output",
    )
    if "COMPILATION ERROR" in output or "There are test failures" in output:
        return ConfigError(f"the Java client does not build against kafka-clients {version}: {first}")
    return EnvironmentError_(f"Maven could not build the Java client for kafka-clients {version}: {first}")


def main(argv: list[str]) -> int:
    """Build for the version in `argv` (or the default) and say where it is; 2 on an error."""
    version = argv[0] if argv else DEFAULT_CLIENT_VERSION
    started = time.monotonic()
    try:
        client = build(version)
    except HarnessError as exc:
        print(f"kchaos: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"kafka-clients {client.version} at {client.root} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
