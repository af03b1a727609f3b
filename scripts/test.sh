#!/bin/sh
# Builds ember and runs every test, in two builds:
#   build/       (gcc, as users build it, with the test hooks): the Check unit tests, the
#                integration tests with the real eBPF programs (root), the benchmarks' budgets;
#   build-fuzz/  (clang with AddressSanitizer and UndefinedBehaviorSanitizer, libFuzzer and
#                source-based coverage): the unit tests and the integration tests again under the
#                sanitizers (but those of NOT_SANITIZED_INTEGRATION below); then each fuzz
#                target for EMBER_FUZZ_SECONDS (default 10) from the corpus kept in
#                tests/fuzz/corpus, and scripts/fuzz-coverage.sh, which prints each target's
#                cov/ft, the lines it reaches and the inputs fuzzing found (scripts/fuzz-merge.sh
#                adds those to the kept corpus). Its daemons' filters allow what the sanitizers'
#                runtimes call (seccomp/sanitizer.policy); a report from any process a test
#                starts, sandboxed or not, fails that test (tests/sanitizer/report.c,
#                emberlib.py's SanitizerLog).
# Every test that skipped is listed at the end (under CI=true nothing skips: it fails), and so
# is the time each part took.
# Usage: sudo scripts/test.sh [extra ctest arguments, e.g. -L unit]: with arguments, the first
# build's tests only, with those arguments.
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ]; then
	scripts/install-deps.sh
else
	echo "test.sh: not root: installing nothing, and the eBPF tests will skip (run with sudo)" >&2
fi
# Every unit test runs under the sanitizers too: the few checks that hold the shipped build's
# own memory (peak resident sizes, which ASan's quarantine raises) or the shape of the test
# program itself are left out of a sanitized build in the tests (#ifndef EMBER_SANITIZERS).
# (The filters of a sanitized build allow what its runtime calls: seccomp/sanitizer.policy.)
# The integration tests it leaves out, and why: first_sample holds the shipped binary's byte
# budgets and first-sample deadlines, which ASan's redzones, shadow memory and slower start
# move; stall's assertions are deadlines on a file system that stops answering (which
# interval holds the stall, a wait of about 1 s), which the sanitized daemons' pace moves;
# systemd runs its units inside a booted Debian tree (systemd-nspawn) that the runtimes'
# options and the report log do not reach; busy_host holds the shipped binary's pace (99% of
# stacks complete on a host with twice as many compilers as CPUs), which the sanitized
# daemons' slower pace moves, and its code paths are every other test's. (bench_* measure the shipped binary: build/ only.)
# Within the others, the tests whose point is agreement with a peer profiler (JFR, NYTProf,
# Excimer, stackprof: emberlib.shipped_build_only) run in the shipped build's pass only: the
# tests beside them take the same code paths under the sanitizers, and CI keeps its hour
# (so do the other JDKs and Node releases than Debian's 17 and Node 20: test_jvm, test_v8).
# The fuzz targets run 10 s each from the kept corpus: with CI's two CPUs, under 3 minutes.
# The counting allocator is in this build too, over ASan's allocator (counting_malloc.c).
# interop sends the profiles test_otlp sends, through programs of other projects (a Collector,
# otlpcheck): the encoder's paths run sanitized in test_otlp.
NOT_SANITIZED_INTEGRATION="first_sample|stall|systemd|busy_host|interop"
times=""
started=$(date +%s)
lap() {
	now=$(date +%s)
	times="$times$(printf '  %-44s %4d s' "$1" $((now - started)))
"
	started=$now
}
status=0
skipped=""
failures=""
# Runs ctest in build dir $1 with the other arguments; keeps the lines of the tests that
# skipped ("SKIP program test: reason", printed by each test that skips, inside a program
# that passed as a whole too), which ctest shows only for failures: listed at the end.
# (Under CI=true nothing skips: such a test fails.)
run_ctest() {
	dir=$1
	shift
	(cd "$dir" && ctest --output-on-failure "$@") || status=1
	log="$dir/Testing/Temporary/LastTest.log"
	if [ -f "$log" ] && grep -q '^SKIP ' "$log"; then
		skipped="$skipped$(grep '^SKIP ' "$log" | sed 's/^/  /')
"
	fi
	# The failed integration tests' one-line reasons (emberlib.run_tests), listed at the end
	# too: a long log's middle may be all a reader of its end never sees.
	if [ -f "$log" ] && grep -q '^FAILED ' "$log"; then
		failures="$failures$(grep '^FAILED ' "$log" | sed "s|^|  $dir: |")
"
	fi
}
# A test build: the test hooks (EMBER_TEST_HOOKS) let test_security.py make the
# sandboxed symbolizer misbehave. Builds for use leave them off (the default).
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_TEST_HOOKS=ON
cmake --build build -j"$(nproc)"
lap "build (gcc)"
if [ $# -gt 0 ]; then
	run_ctest build "$@"
	lap "ctest $*"
else
	# Unit tests are independent processes without wall-clock gates a loaded host could
	# miss (test_reader and test_broker_pool wait far longer than any load delays): one
	# per CPU at once.
	run_ctest build -L unit -j"$(nproc)"
	lap "unit tests"
	run_ctest build -L integration
	lap "integration tests"
	run_ctest build -L bench
	lap "benchmark budgets (bench_flamegraph, bench_soak)"
	# The sanitizer and fuzz build: ASan+UBSan in every library and program (UBSan's findings
	# fatal), libFuzzer targets, coverage.
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DEMBER_FUZZ=ON -DEMBER_FUZZ_COVERAGE=ON \
		-DEMBER_TEST_HOOKS=ON -DEMBER_FUZZ_SECONDS="${EMBER_FUZZ_SECONDS:-10}"
	cmake --build build-fuzz -j"$(nproc)"
	lap "build (clang, sanitizers, fuzzers)"
	# A finding ends the process. Coverage is measured by fuzz-coverage.sh alone.
	export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1}"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
	export LLVM_PROFILE_FILE=/dev/null
	run_ctest build-fuzz -L unit -j"$(nproc)"
	lap "unit tests under ASan+UBSan"
	echo "test.sh: under the sanitizers, all integration tests but" \
		"integration_{${NOT_SANITIZED_INTEGRATION}} (see test.sh)"
	run_ctest build-fuzz -L integration -E "^integration_(${NOT_SANITIZED_INTEGRATION})\$"
	lap "integration tests under ASan+UBSan"
	# A fuzz target is one process on one CPU for its seconds of wall time: one per CPU at
	# once, the same fuzzing in half the time on CI's two CPUs.
	run_ctest build-fuzz -L fuzz -j"$(nproc)"
	lap "fuzz targets (${EMBER_FUZZ_SECONDS:-10} s each)"
	unset LLVM_PROFILE_FILE
	scripts/fuzz-coverage.sh build-fuzz 0 || status=1
	lap "fuzz coverage"
fi
if [ -n "$skipped" ]; then
	echo "test.sh: $(printf '%s' "$skipped" | grep -c .) tests skipped:"
	printf '%s' "$skipped"
fi
if [ -n "$failures" ]; then
	echo "test.sh: $(printf '%s' "$failures" | grep -c .) integration tests failed:"
	printf '%s' "$failures"
	# .ci/run prints them once more, after the packaging tests.
	[ -z "${EMBER_TEST_FAILURES:-}" ] || printf '%s' "$failures" >>"$EMBER_TEST_FAILURES"
fi
echo "test.sh: time by part:"
printf '%s' "$times"
if [ "$status" -ne 0 ]; then
	echo "test.sh: some tests failed (see above)" >&2
fi
exit "$status"
