"""The client axis: which client library a workload part runs (docs/SCENARIOS.md, `client`).

A part (the acks producers, the transactional producers, the pipeline, each consumer group) runs
librdkafka (confluent-kafka, the installed release) or the Java client
(`org.apache.kafka:kafka-clients`, any release, built on demand by `harness.java_client`). A scenario
names a default (`workload.client`, or `kchaos run --client`) and any part may name its own; the text
is `librdkafka`, `java` or `java:<kafka-clients release>`.

`ClientChoice` is what a scenario names; `resolve` makes it a `Client`: the command that starts a
workload process of it, and what run.json records of it (library and version; for Java also the JVM
that runs it). `java` without a release runs the brokers' own release of kafka-clients (from 2.5, the
oldest the program builds against), else DEFAULT_CLIENT_VERSION.
"""

from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass

import confluent_kafka

from contract.errors import ConfigError
from contract.limits import brief
from harness.broker_config import KafkaVersion
from harness.java_client import DEFAULT_CLIENT_VERSION, build, java
from harness.maven_release import is_version
from harness.workload_process import CHILD

LIBRDKAFKA, JAVA = "librdkafka", "java"
LIBRARIES = (LIBRDKAFKA, JAVA)
JAVA_LIBRARY = "kafka-clients"
"""The Java client's name in run.json: its Maven artifact, as `librdkafka` is the C library's."""
OLDEST_JAVA_CLIENT = (2, 5)
"""The oldest kafka-clients the program builds against (sendOffsetsToTransaction with the consumer's
group metadata, KIP-447)."""
OLDEST_JAVA_BROKER = (0, 10)
"""The Java client needs ApiVersions (KIP-35, Kafka 0.10): it cannot talk to 0.9 brokers."""


def librdkafka_version() -> str:
    """The installed librdkafka's release (confluent-kafka's C library)."""
    return str(confluent_kafka.libversion()[0])


@dataclass(frozen=True)
class ClientChoice:
    """A client library as a scenario names it: `library` and, for Java, a kafka-clients release
    (None: the brokers' own)."""

    library: str = LIBRDKAFKA
    version: str | None = None

    @classmethod
    def parse(cls, text: object, where: str) -> ClientChoice:
        """`librdkafka`, `librdkafka:<the installed release>`, `java` or `java:<release>`; a ConfigError
        naming `where` otherwise."""
        if not isinstance(text, str):
            raise ConfigError(f"{where}: expected librdkafka, java or java:<release>, got {brief(text)}")
        library, _, version = text.strip().partition(":")
        if library not in LIBRARIES or (":" in text and not version):
            raise ConfigError(
                f"{where}: expected librdkafka, java or java:<kafka-clients release> (e.g. java:3.9.1), "
                f"got {brief(text)}"
            )
        if library == LIBRDKAFKA and version and version != librdkafka_version():
            raise ConfigError(
                f"{where}: librdkafka {librdkafka_version()} is the one installed (confluent-kafka's); "
                f"got {brief(text)}: name it without a release"
            )
        if library == JAVA and version and not is_version(version):
            raise ConfigError(f"{where}: {version!r} is not a kafka-clients release (like 3.9.1 or 4.1.1)")
        return cls(library, version if library == JAVA and version else None)

    @property
    def text(self) -> str:
        """As a scenario names it (what `parse` reads back)."""
        return f"{self.library}:{self.version}" if self.version else self.library

    @property
    def is_java(self) -> bool:
        return self.library == JAVA


LIBRDKAFKA_CLIENT = ClientChoice()


@dataclass(frozen=True)
class Client:
    """A resolved client: the command that starts a workload process of it (its spec follows), and
    what run.json records of it."""

    choice: ClientChoice
    version: str
    """librdkafka's release, or kafka-clients'."""
    command: tuple[str, ...]
    jvm: str = ""
    """Java: the first line `java -version` printed."""

    @property
    def is_java(self) -> bool:
        return self.choice.is_java

    @property
    def library(self) -> str:
        """Its name in run.json: `librdkafka` or `kafka-clients`."""
        return JAVA_LIBRARY if self.is_java else LIBRDKAFKA

    def recorded(self) -> dict[str, str]:
        """Its entry in run.json (`client`, a topic's or a group's `client`)."""
        if self.is_java:
            return {"library": JAVA_LIBRARY, "version": self.version, "java": self.jvm}
        return {"library": LIBRDKAFKA, "version": self.version, "python": str(confluent_kafka.__version__)}


def java_release_for(brokers: KafkaVersion) -> str:
    """The kafka-clients release `java` runs against brokers of release `brokers`: theirs when the
    program builds against it, else DEFAULT_CLIENT_VERSION."""
    return str(brokers) if brokers.at_least(*OLDEST_JAVA_CLIENT) else DEFAULT_CLIENT_VERSION


@functools.cache
def _librdkafka() -> Client:
    return Client(LIBRDKAFKA_CLIENT, librdkafka_version(), tuple(CHILD))


def resolve(choice: ClientChoice, brokers: KafkaVersion) -> Client:
    """`choice` against brokers of release `brokers`: a Java client is built now unless it is in the
    cache (ConfigError for a release Maven Central lacks, or one the program does not build against)."""
    if not choice.is_java:
        return _librdkafka()
    if not brokers.at_least(*OLDEST_JAVA_BROKER):
        raise ConfigError(
            f"client {choice.text}: the Java client cannot talk to Kafka {brokers} brokers (it needs "
            "ApiVersions, Kafka 0.10 and later); use librdkafka"
        )
    return _java(choice.version or java_release_for(brokers))


@functools.cache
def _java(version: str) -> Client:
    built = build(version)
    return Client(ClientChoice(JAVA, version), version, tuple(built.command), jvm_version())


@functools.cache
def jvm_version() -> str:
    """The first line `java -version` prints, of the java that runs Java workload processes."""
    done = subprocess.run([str(java()), "-version"], capture_output=True, text=True, check=False)
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[0] if lines else ""
