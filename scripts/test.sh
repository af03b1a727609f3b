#!/bin/sh
# Builds ember and runs every test: Check unit tests, integration tests with
# the real eBPF programs (root), and the fuzz targets for a bounded time.
# Usage: sudo scripts/test.sh [extra ctest arguments, e.g. -L unit]
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ]; then
	scripts/install-deps.sh
else
	echo "test.sh: not root: installing nothing, and the eBPF tests will skip (run with sudo)" >&2
fi
# A test build: the test hooks (EMBER_TEST_HOOKS) let test_security.py make the
# sandboxed symbolizer misbehave. Builds for use leave them off (the default).
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_TEST_HOOKS=ON
cmake --build build -j"$(nproc)"
status=0
(cd build && ctest --output-on-failure "$@") || status=1
# Each test that skipped says so in one line ("SKIP program test: reason"), inside a
# program that passed as a whole too: listed here, since ctest shows only the failures'
# output. (Under CI=true nothing skips: such a test fails.)
skips() {
	log="$1/Testing/Temporary/LastTest.log"
	[ -f "$log" ] || return 0
	n=$(grep -c '^SKIP ' "$log" || true)
	[ "$n" -eq 0 ] && return 0
	echo "test.sh: $n tests skipped in $1:"
	grep '^SKIP ' "$log" | sed 's/^/  /'
}
# The fuzz targets (tests/fuzz): a clang build of their own, each target run for
# a bounded time (EMBER_FUZZ_SECONDS, default 30). Skipped when ctest arguments
# select other tests.
if [ $# -eq 0 ]; then
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DEMBER_FUZZ=ON \
		-DEMBER_FUZZ_SECONDS="${EMBER_FUZZ_SECONDS:-30}"
	# shellcheck disable=SC2046
	cmake --build build-fuzz -j"$(nproc)" --target $(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
	(cd build-fuzz && ctest --output-on-failure -L fuzz) || status=1
fi
skips build
if [ "$status" -ne 0 ]; then
	echo "test.sh: some tests failed (see above)" >&2
fi
exit "$status"
