#!/bin/sh
# Installs the Debian/Ubuntu packages ember needs to build, run and test.
# Usage: sudo scripts/install-deps.sh [--runtime-only | --packaging]
#   (none)          what the build and scripts/test.sh need, including the fuzz
#                   build's sanitizer and libFuzzer runtimes (libclang-rt-N-dev,
#                   N = clang's release), xz (the MiniDebugInfo test), podman
#                   (test_select's --container case), debootstrap and systemd-nspawn
#                   (test_systemd: --unit in a booted Debian tree), ruby3.1 and
#                   ruby-stackprof (test_ruby: the interpreter and the peer), php8.2-cli,
#                   php8.2-fpm and php-excimer (test_php: the same), perl and
#                   libdevel-nytprof-perl (test_perl: the same), openjdk-17-jdk-headless
#                   (the JVM reader's tests: a HotSpot VM, javac and JFR), nodejs and
#                   erlang-base (test_perfmap: JITs that write perf maps)
#   --runtime-only  what the build needs
#   --packaging     what the build, scripts/package.sh and scripts/test-packages.sh
#                   need: debhelper, lintian, rpm, rpmlint, debootstrap,
#                   systemd-nspawn, podman
set -eu
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (sudo $0)" >&2
	exit 1
fi
build="cmake make gcc clang llvm pkg-config bpftool libbpf-dev libelf-dev libdw-dev
  libsodium-dev libprotobuf-c-dev protobuf-c-compiler libseccomp-dev libcurl4-openssl-dev
  zlib1g-dev liblzma-dev libdeflate-dev check libsubunit-dev ca-certificates"
test="elfutils libc6-dbg golang-go linux-perf libbpf-tools bpfcc-tools protobuf-compiler python3 python3.11 python3-protobuf python3-grpcio
  ruby3.1 ruby-stackprof php8.2-cli php8.2-fpm php-excimer perl libdevel-nytprof-perl
  openjdk-17-jdk-headless nodejs erlang-base procps util-linux strace chromium python3-websocket openssl binutils xz-utils fuse3 libfuse3-dev
  podman runc uidmap catatonit debootstrap systemd-container debuginfod curl"
packaging="debhelper dpkg-dev fakeroot lintian man-db rpm rpmlint debootstrap systemd-container
  podman runc uidmap catatonit git python3 python3-yaml python3-protobuf protobuf-compiler procps file cpio"
export DEBIAN_FRONTEND=noninteractive
# The compiler-rt runtimes (ASan, UBSan, libFuzzer) match clang's major version:
# read it from the archive's `clang` package (Debian 12: 14).
clang_rt() {
	v=$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n1)
	[ -n "$v" ] && echo "libclang-rt-$v-dev"
}
case "${1:-}" in
--runtime-only) pkgs="$build" ;;
--packaging) pkgs="$build $packaging" ;;
"")
	rt=$(clang_rt) || { apt-get update -qq && rt=$(clang_rt); } ||
		{ echo "install-deps: cannot tell which libclang-rt-N-dev matches clang; is the archive reachable?" >&2; exit 1; }
	pkgs="$build $test $rt"
	;;
*)
	echo "usage: $0 [--runtime-only | --packaging]" >&2
	exit 2
	;;
esac
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
