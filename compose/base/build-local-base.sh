#!/usr/bin/env bash
# Build a JRE base image without any image registry: debootstrap a minimal Debian root
# filesystem from the mirror apt already uses, then `docker import` it.
# Usage: build-local-base.sh IMAGE_TAG
set -euo pipefail
tag=${1:?usage: build-local-base.sh IMAGE_TAG}

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "base image $tag already present"
  exit 0
fi

# The mirror apt is configured with (deb822 sources first, then the one-line format);
# never a hard-coded host.
mirror=$(
  { grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security;
    grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}' | grep -E 'debian/?$'; } \
  | grep -m1 -E 'debian/?$' || true)
if [ -z "$mirror" ]; then
  echo "error: could not find a Debian mirror in apt's sources (/etc/apt/sources.list*)" >&2
  exit 2
fi
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")

rootfs=$(mktemp -d /tmp/kchaos-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "debootstrap $suite from $mirror into $rootfs"
debootstrap --variant=minbase \
  --include=openjdk-17-jre-headless,iproute2,iptables,procps,netcat-openbsd \
  "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || { tail -20 "$rootfs.log" >&2; exit 1; }
rm -f "$rootfs.log"
# Keep the image small: apt caches and docs are not needed at run time.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
tar -C "$rootfs" -c . | docker import -c 'ENV LANG=C.UTF-8' - "$tag" >/dev/null
echo "built base image $tag"
