#!/bin/sh
# Installs the Debian/Ubuntu packages ember needs to build, run and test.
# Usage: sudo scripts/install-deps.sh [--runtime-only]
set -eu
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (sudo $0)" >&2
	exit 1
fi
build="cmake make gcc clang llvm pkg-config bpftool libbpf-dev libelf-dev libdw-dev
  libsodium-dev libprotobuf-c-dev protobuf-c-compiler libseccomp-dev libcurl4-openssl-dev
  zlib1g-dev liblzma-dev check libsubunit-dev ca-certificates"
test="elfutils libc6-dbg golang-go linux-perf protobuf-compiler python3 python3-protobuf python3-grpcio
  procps util-linux chromium python3-websocket openssl binutils"
pkgs="$build"
[ "${1:-}" = "--runtime-only" ] || pkgs="$build $test"
export DEBIAN_FRONTEND=noninteractive
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-deps: installing:$missing"
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing
fi
echo "install-deps: all packages present"
