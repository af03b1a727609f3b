#!/bin/sh
# Makes a Debian 12 base image for packaging/container/Containerfile where no
# container registry is reachable: a minimal debootstrap tree (the packages
# of debian:12-slim's size class) imported into podman.
# Usage: sudo packaging/container/make-base-image.sh [IMAGE]
#   IMAGE defaults to localhost/debian:12-slim; then build ember's image with
#   podman build --build-arg BASE=localhost/debian:12-slim -f packaging/container/Containerfile -t ember:VERSION dist/
# Needs debootstrap and podman (scripts/install-deps.sh --packaging) and
# deb.debian.org (or MIRROR=...).
set -eu
image=${1:-localhost/debian:12-slim}
mirror=${MIRROR:-http://deb.debian.org/debian}
if [ "$(id -u)" -ne 0 ]; then
	echo "make-base-image: run as root (debootstrap needs it): sudo $0" >&2
	exit 1
fi
for tool in debootstrap podman; do
	command -v "$tool" >/dev/null || {
		echo "make-base-image: $tool is missing: sudo scripts/install-deps.sh --packaging" >&2
		exit 1
	}
done
tree=$(mktemp -d "${TMPDIR:-/var/tmp}/ember-base-XXXXXX")
trap 'rm -rf "$tree"' EXIT
debootstrap --variant=minbase bookworm "$tree" "$mirror" >"$tree.log" 2>&1 || {
	tail -20 "$tree.log" >&2
	echo "make-base-image: debootstrap failed (log above); is $mirror reachable?" >&2
	exit 1
}
rm -f "$tree.log"
# As the official slim image: no package lists, caches, documentation or
# logs; apt configured like a container's (no recommends, no caches).
chroot "$tree" apt-get clean
rm -rf "$tree"/var/lib/apt/lists/* "$tree"/var/cache/apt/*.bin "$tree"/var/log/* \
	"$tree"/usr/share/doc/* "$tree"/usr/share/man/* "$tree"/usr/share/info/*
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$tree/etc/apt/apt.conf.d/90container"
printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\npath-include /usr/share/doc/*/copyright\n' \
	>"$tree/etc/dpkg/dpkg.cfg.d/90container"
: >"$tree/etc/resolv.conf"
tar -C "$tree" --numeric-owner -c . | podman import -q --change 'CMD ["bash"]' - "$image" >/dev/null
echo "make-base-image: $image ($(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
