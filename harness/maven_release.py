"""An Apache Kafka release by version number, resolved from Maven Central with Maven itself.

Apache publishes every broker release as `org.apache.kafka:kafka_<scala>:<version>`. A generated POM
with the broker (plus, where the artifact lacks them, a logging backend and the tools module) as its
dependencies and `mvn dependency:copy-dependencies` give the `libs/` directory the image runs from:
the broker, its ZooKeeper (the version the release line ships with) and every other jar. The result
is kept in the cache by version, written whole or not at all, so a second resolve asks nothing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from contract.errors import ConfigError, EnvironmentError_
from harness.broker_config import KafkaVersion

GROUP = "org.apache.kafka"
RESOLVE_TIMEOUT_S = 900
"""A first resolve of a 4.x release fetches ~60 MB; a stuck download must still end."""

_VERSION_SHAPE = re.compile(r"\d+\.\d+(\.\d+){0,2}")
_COMPLETE = ".resolved"
"""Written last into a resolved release's directory: its absence means an interrupted resolve."""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Logging backends for releases whose broker artifact brings none (Kafka 1.1.0 stopped depending on
# slf4j-log4j12; 4.0 moved to log4j 2 and depends on log4j-core but no slf4j binding).
_RELOAD4J = (("ch.qos.reload4j", "reload4j", "1.2.25"), ("org.slf4j", "slf4j-reload4j", "1.7.36"))
_LOG4J2_SLF4J = (("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"),)
# Java 11 removed javax.xml.bind from the JDK; the ZooKeeper 3.4 client of releases before 2.1 (which
# added Java 11 support) calls it when the broker connects. With the API jar they run on Java 17.
_JAXB_API = (("javax.xml.bind", "jaxb-api", "2.3.1"),)


def is_version(text: str) -> bool:
    """Whether `text` reads as a Kafka release number (3.9.1, 0.9.0.1), not a path."""
    return bool(_VERSION_SHAPE.fullmatch(text))


def scala_suffix(version: KafkaVersion) -> str:
    """The Scala build the harness takes for a release line (Apache publishes 2.10/2.11 up to 0.10,
    2.11/2.12 for 0.11-2.3, 2.12/2.13 from 2.4, 2.13 only from 4.0)."""
    if not version.at_least(1, 0):
        return "2.11"
    if not version.at_least(2, 4):
        return "2.12"
    return "2.13"


@dataclass(frozen=True)
class MavenRelease:
    """One release's coordinates and the extra artifacts its image needs."""

    version: str

    @property
    def kafka_version(self) -> KafkaVersion:
        return KafkaVersion.parse(self.version)

    @property
    def broker_artifact(self) -> str:
        return f"kafka_{scala_suffix(self.kafka_version)}"

    @property
    def coordinates(self) -> str:
        return f"{GROUP}:{self.broker_artifact}:{self.version}"

    def dependencies(self) -> list[tuple[str, str, str]]:
        """(group, artifact, version) of every direct dependency: the broker first."""
        deps = [(GROUP, self.broker_artifact, self.version)]
        kafka = self.kafka_version
        if kafka.at_least(3, 3):  # TopicCommand (3.7+) and the metadata quorum tool live in tools
            deps.append((GROUP, "kafka-tools", self.version))
        if not kafka.at_least(2, 1):
            deps += _JAXB_API
        if kafka.at_least(4, 0):
            deps += _LOG4J2_SLF4J
        elif kafka.at_least(1, 1):
            deps += _RELOAD4J
        return deps

    def pom(self) -> str:
        dependencies = "".join(
            f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
            for g, a, v in self.dependencies()
        )
        return (
            '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>kchaos</groupId><artifactId>kafka-release</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{dependencies}</dependencies></project>\n"
        )


def resolve(version: str, cache: Path) -> Path:
    """The directory (with libs/) of Kafka `version`, resolved by Maven into `cache` once.

    ConfigError when Maven Central has no such release; EnvironmentError_ when Maven is missing or
    fails otherwise. Nothing half-resolved is left behind."""
    if not is_version(version):
        raise ConfigError(f"{version!r} is not a Kafka release number (like 3.9.1 or 0.11.0.3)")
    release = MavenRelease(version)
    target = cache / "dist" / f"maven-kafka-{version}"
    if (target / _COMPLETE).is_file():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentError_(
            f"Maven (mvn) is needed to resolve Kafka {version} from Maven Central; run `make setup`"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".maven-kafka-{version}-", dir=target.parent))
    try:
        (staging / "pom.xml").write_text(release.pom())
        command = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(staging / "pom.xml")]
        command += [
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staging / 'libs'}",
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise EnvironmentError_(
                f"Maven did not resolve Kafka {version} ({release.coordinates}) within {RESOLVE_TIMEOUT_S} s"
            ) from None
        if done.returncode != 0:
            raise _maven_failure(release, done.stdout + done.stderr)
        (staging / "pom.xml").unlink()
        (staging / _COMPLETE).write_text(release.coordinates + "\n")
        if (target / _COMPLETE).is_file():  # another process resolved it meanwhile: keep theirs
            return target
        shutil.rmtree(target, ignore_errors=True)  # an interrupted resolve's leftovers
        try:
            staging.rename(target)
        except OSError as exc:
            if (target / _COMPLETE).is_file():
                return target
            raise EnvironmentError_(
                f"cannot keep Kafka {version} in the cache at {target}: {exc.strerror}"
            ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def source_of(root: Path) -> str | None:
    """`maven:<coordinates>` for a directory `resolve` made, else None."""
    marker = root / _COMPLETE
    return f"maven:{marker.read_text().strip()}" if marker.is_file() else None


def _maven_failure(release: MavenRelease, output: str) -> Exception:
    output = _ANSI.sub("", output)
    broker_jar = f"{GROUP}:{release.broker_artifact}:jar:{release.version}"
    # Maven's words differ between a first miss and a cached one; both name the broker's jar.
    if re.search(
        rf"Could not find artifact {re.escape(broker_jar)}|{re.escape(broker_jar)} was not found", output
    ):
        return ConfigError(
            f"Kafka {release.version}: Maven Central has no {release.coordinates}; "
            "is it a released version (e.g. 3.9.1, 2.8.2, 0.11.0.3)?"
        )
    errors = [line.removeprefix("[ERROR] ").strip() for line in output.splitlines() if "[ERROR]" in line]
    first = next((line for line in errors if line), output.strip()[-300:] or "no output")
    return EnvironmentError_(
        f"Maven could not resolve Kafka {release.version} ({release.coordinates}): {first}"
    )
