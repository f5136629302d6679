"""Kafka distributions and the kchaos/kafka image, tagged by the content of its inputs.

A distribution is a Kafka release: by version number, resolved from Maven Central
(`harness.maven_release`), or a release tarball or unpacked directory the user points at. The
default is what $KCHAOS_KAFKA names, else DEFAULT_KAFKA_VERSION. The image tag is a hash of the
Dockerfile, entrypoint, logging configurations, base image id and every file of the distribution, so
a changed input rebuilds and an unchanged one does not.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from docker.errors import BuildError, DockerException, ImageNotFound

from contract.errors import ConfigError, EnvironmentError_
from harness import docker_env, maven_release

COMPOSE_DIR = Path(__file__).resolve().parents[1] / "compose"
KAFKA_IMAGE_DIR = COMPOSE_DIR / "kafka"
IMAGE_FILES = ("Dockerfile", "entrypoint.sh", "log4j.properties", "log4j2.properties")
"""The files of KAFKA_IMAGE_DIR that go into the image (and so into its tag)."""
LOCAL_BASE_SCRIPT = COMPOSE_DIR / "base" / "build-local-base.sh"
LOCAL_BASE_IMAGE = "kchaos/base-jre:bookworm"
IMAGE_REPO = "kchaos/kafka"
DEFAULT_KAFKA_VERSION = "3.9.2"
"""The release a run uses when it names none: the newest that still has ZooKeeper mode, the
replication model the design describes (seed 000); KRaft is `cluster.metadata: kraft` away."""
KAFKA_ENV = "KCHAOS_KAFKA"
"""Names the release a run uses when it names none, instead of DEFAULT_KAFKA_VERSION."""


def default_release() -> str:
    """$KCHAOS_KAFKA, else DEFAULT_KAFKA_VERSION."""
    return os.environ.get(KAFKA_ENV, "").strip() or DEFAULT_KAFKA_VERSION


CACHE_ENV = "KCHAOS_CACHE"
VERSION_LABEL = "kchaos.kafka.version"
SOURCE_LABEL = "kchaos.kafka.source"
CONFIG_KEYS_LABEL = "kchaos.broker-config-keys"
# Images whose entrypoint writes KCHAOS_CONFIG as it is; older ones expanded backslashes (printf %b).
VERBATIM_CONFIG_LABEL = "kchaos.config-verbatim"

_KAFKA_JAR = re.compile(r"^kafka_(?P<scala>[0-9.]+)-(?P<version>[0-9][^-]*(?:-[A-Za-z0-9]+)?)\.jar$")
_DOC_JARS = re.compile(r"-(sources|javadoc|scaladoc|test)\.jar(\.asc)?$|\.asc$")


def cache_dir() -> Path:
    """$KCHAOS_CACHE (where Kafka distributions are unpacked), else ~/.cache/kchaos; made if missing."""
    setting = os.environ.get(CACHE_ENV, "")
    root = Path(setting) if setting else Path.home() / ".cache" / "kchaos"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = f"{CACHE_ENV}={setting}" if setting else str(root)
        raise ConfigError(f"{where}: cannot use it as the cache directory ({exc.strerror})") from None
    return root


@dataclass(frozen=True)
class KafkaDistribution:
    """An unpacked Kafka release: a directory with libs/, and where it came from (`source`:
    `maven:<coordinates>`, `tarball:<path>` or `directory:<path>`, recorded in run.json)."""

    root: Path
    version: str
    source: str = ""

    @classmethod
    def from_directory(cls, root: Path, source: str | None = None) -> KafkaDistribution:
        libs = root / "libs"
        if not libs.is_dir():
            raise ConfigError(f"{root}: not a Kafka distribution (expected a libs/ directory inside)")
        for jar in sorted(libs.iterdir()):
            match = _KAFKA_JAR.match(jar.name)
            if match and not _DOC_JARS.search(jar.name):
                origin = source or maven_release.source_of(root) or f"directory:{root}"
                return cls(root, match.group("version"), origin)
        raise ConfigError(f"{libs}: no kafka_<scala>-<version>.jar found, cannot tell the Kafka version")

    @classmethod
    def locate(cls, source: str | Path | None = None) -> KafkaDistribution:
        """The release `source` names: a version number (from Maven Central), a tarball or a
        directory; None is `default_release()`."""
        text = str(source) if source is not None else default_release()
        path = Path(text)
        if maven_release.is_version(text) and not path.exists():
            return cls.from_directory(maven_release.resolve(text, cache_dir()))
        if path.is_dir():
            return cls.from_directory(path)
        if path.is_file() and path.name.endswith((".tgz", ".tar.gz")):
            return cls.from_directory(_unpack_tarball(path), f"tarball:{path}")
        raise ConfigError(
            f"{text}: expected a Kafka release number (like 3.9.1), a release tarball (.tgz) "
            "or an unpacked directory"
        )

    def config_keys(self) -> list[str]:
        """Broker config keys of this release, from the config table its own KafkaConfig prints
        (the table Kafka's documentation is generated from)."""
        java = shutil.which("java")
        if java is None:
            raise EnvironmentError_(
                "Java is needed to read a Kafka release's broker settings; run `make setup`"
            )
        command = [java, "-Xmx128m", "-cp", f"{self.root / 'libs'}/*", "kafka.server.KafkaConfig"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise EnvironmentError_(
                f"{self.root}: Kafka {self.version}'s KafkaConfig did not answer in 120 s"
            ) from None
        keys = broker_config_keys(done.stdout)
        if not keys:
            tail = (done.stderr.strip() or done.stdout.strip())[-300:] or "no output"
            raise EnvironmentError_(
                f"{self.root}: Kafka {self.version}'s kafka.server.KafkaConfig printed no broker "
                f"config table (exit {done.returncode}): {tail}"
            )
        return keys

    def java_problem(self, java_major: int) -> str | None:
        """Why this release cannot run on Java `java_major`, or None. Seen on real starts: 0.9-1.1 and
        2.4-4.x run on 17; the ZooKeeper 3.4.13/3.4.14 client of 2.0-2.3 cannot connect on 14 and
        later (it parses the text of an unresolved address, whose form changed in Java 14:
        apache/zookeeper#1509), so those brokers exit."""
        client = next((jar.name for jar in (self.root / "libs").glob("zookeeper-3.4.1[34].jar")), None)
        if client and java_major >= 14:
            return (
                f"Kafka {self.version} does not start on Java {java_major}: its ZooKeeper client "
                f"({client}) cannot connect on Java 14 and later (apache/zookeeper#1509); use a base image "
                "with Java 8 or 11 (--base-image eclipse-temurin:11-jre where a registry answers), "
                "or a release of another line (1.1.1, 2.4.1 and later run on 17)"
            )
        return None

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for path in sorted(p for p in self.root.rglob("*") if p.is_file() and not _DOC_JARS.search(p.name)):
            digest.update(str(path.relative_to(self.root)).encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()


_CONFIG_TABLE_SHAPES = (
    r'id="brokerconfigs_([a-z0-9._-]+)"',  # 2.8, 3.x, 4.x: an anchor per key
    r"<li>\s*<b>([a-z0-9._-]+)</b>:",  # 2.4: a list item per key, its name in bold
    r"<tr>\s*<td>([a-z0-9._-]+)</td>",  # 0.9-1.1: a table whose first cell is the key
)


def broker_config_keys(html: str) -> list[str]:
    """The broker config keys of a release's config table (KafkaConfig's main prints it), in any of
    the shapes _CONFIG_TABLE_SHAPES lists."""
    for shape in _CONFIG_TABLE_SHAPES:
        if keys := re.findall(shape, html):
            return sorted(set(keys))
    return []


_ARCHIVE_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error)
"""What reading a broken or truncated .tgz raises: tarfile's own errors, gzip's EOFError, zlib's."""


def _reason(exc: BaseException) -> str:
    """An archive error on one line (tarfile lists what each compression method said, line by line)."""
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _unpack_tarball(tarball: Path) -> Path:
    """Unpack a release tarball into the cache, once. ConfigError naming the tarball when it is no
    readable tar archive or holds no Kafka distribution; nothing of it is left in the cache then."""
    try:
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        raise ConfigError(f"{tarball}: cannot read ({exc.strerror})") from None
    target = cache_dir() / "dist" / f"{tarball.name.split('.t')[0]}-{digest}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=cache_dir()))
    try:
        try:
            with tarfile.open(tarball) as tar:
                tar.extractall(staging, filter="data")
        except _ARCHIVE_ERRORS as exc:
            raise ConfigError(f"{tarball}: not a readable tar archive ({_reason(exc)})") from None
        tops = list(staging.iterdir())
        root = tops[0] if len(tops) == 1 and tops[0].is_dir() else staging
        try:
            KafkaDistribution.from_directory(root)
        except ConfigError:
            raise ConfigError(
                f"{tarball}: no Kafka release inside (expected libs/kafka_<scala>-<version>.jar "
                "in it or in its one top directory)"
            ) from None
        root.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


@dataclass(frozen=True)
class KafkaImage:
    tag: str
    kafka_version: str
    config_keys: tuple[str, ...]
    verbatim_config: bool = True
    source: str = ""
    """Where the release came from (KafkaDistribution.source); empty for images built before it was kept."""

    @classmethod
    def inspect(cls, tag: str) -> KafkaImage:
        try:
            image = docker_env.client().images.get(tag)
        except ImageNotFound:
            raise ConfigError(f"image {tag!r} does not exist; build it with `kchaos images build`") from None
        labels = image.labels or {}
        version = labels.get(VERSION_LABEL)
        if not version:
            raise ConfigError(
                f"image {tag!r} has no {VERSION_LABEL} label; build it with `kchaos images build`"
            )
        keys = tuple(k for k in labels.get(CONFIG_KEYS_LABEL, "").split(",") if k)
        return cls(
            tag, version, keys, labels.get(VERBATIM_CONFIG_LABEL) == "true", labels.get(SOURCE_LABEL, "")
        )


def ensure_base_image(base_image: str) -> str:
    """Make sure the base image exists: build the local debootstrap base, or pull a registry one."""
    docker_client = docker_env.client()
    try:
        return str(docker_client.images.get(base_image).id)
    except ImageNotFound:
        pass
    if base_image == LOCAL_BASE_IMAGE:
        result = subprocess.run(["bash", str(LOCAL_BASE_SCRIPT), base_image], capture_output=True, text=True)
        if result.returncode != 0:
            raise EnvironmentError_(f"building the local base image failed:\n{result.stderr.strip()[-2000:]}")
    else:
        try:
            docker_client.images.pull(base_image)
        except DockerException as exc:
            raise EnvironmentError_(
                f"base image {base_image!r} is not here and cannot be pulled: {exc}"
            ) from None
    return str(docker_client.images.get(base_image).id)


_JAVA_VERSION = re.compile(r'version "(?:1\.)?(\d+)')


def java_major(image: str) -> int:
    """The major version of the Java runtime in `image` (8 for "1.8.0_402", 17 for "17.0.15")."""
    with docker_env.ScratchContainer(image, "java-probe", lifetime_s=60) as probe:
        code, output = probe.exec(["java", "-version"], timeout_s=30)
    found = _JAVA_VERSION.search(output)
    if code != 0 or not found:
        raise EnvironmentError_(
            f"image {image} has no working Java (`java -version`: {output.strip()[-200:]})"
        )
    return int(found.group(1))


def ensure_kafka_image(dist: KafkaDistribution, base_image: str = LOCAL_BASE_IMAGE) -> KafkaImage:
    """Build the Kafka image for `dist` on `base_image` unless one with the same inputs exists."""
    base_id = ensure_base_image(base_image)
    digest = hashlib.sha256()
    for name in IMAGE_FILES:
        digest.update((KAFKA_IMAGE_DIR / name).read_bytes())
    digest.update(base_id.encode())
    digest.update(dist.fingerprint().encode())
    tag = f"{IMAGE_REPO}:{dist.version}-{digest.hexdigest()[:12]}"
    docker_client = docker_env.client()
    try:
        docker_client.images.get(tag)
        return KafkaImage.inspect(tag)
    except ImageNotFound:
        pass
    problem = dist.java_problem(java_major(base_image))  # an image that exists passed this when built
    if problem:
        raise EnvironmentError_(problem)
    keys = dist.config_keys()
    context = _build_context(dist)
    try:
        docker_client.images.build(
            fileobj=context,
            custom_context=True,
            tag=tag,
            rm=True,
            forcerm=True,
            buildargs={"BASE_IMAGE": base_image, "KAFKA_VERSION": dist.version},
            labels={
                VERSION_LABEL: dist.version,
                CONFIG_KEYS_LABEL: ",".join(keys),
                VERBATIM_CONFIG_LABEL: "true",
                SOURCE_LABEL: dist.source,
            },
        )
    except BuildError as exc:
        log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
        raise EnvironmentError_(f"building {tag} failed: {exc.msg}\n{log[-2000:]}") from None
    return KafkaImage(tag, dist.version, tuple(keys), source=dist.source)


def _build_context(dist: KafkaDistribution) -> io.BytesIO:
    """A tar of Dockerfile, entrypoint and the distribution (without docs, sources and test jars)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in IMAGE_FILES:
            tar.add(KAFKA_IMAGE_DIR / name, name)
        for sub in ("libs", "config", "bin"):
            if (dist.root / sub).is_dir():
                tar.add(
                    dist.root / sub,
                    f"kafka/{sub}",
                    filter=lambda info: None if _DOC_JARS.search(info.name) else info,
                )
    buffer.seek(0)
    return buffer
