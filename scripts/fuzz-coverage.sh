#!/bin/sh
# Line coverage the fuzz targets reach in each parser: builds them with clang's
# source-based coverage (and their sanitizers), optionally fuzzes each for a
# while, runs each over its corpus (the seeds in tests/fuzz/corpus/NAME and
# what fuzzing kept in BUILD/tests/fuzz/corpus_NAME) without mutating, and
# prints llvm-cov's report for the sources of the parsers they feed.
# Usage: scripts/fuzz-coverage.sh [BUILD_DIR [SECONDS_OF_FUZZING_PER_TARGET]]
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-fuzz-coverage}
seconds=${2:-0}
for tool in clang llvm-profdata llvm-cov; do
	command -v "$tool" >/dev/null || {
		echo "fuzz-coverage: $tool is missing: run scripts/install-deps.sh" >&2
		exit 2
	}
done
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DEMBER_FUZZ=ON -DEMBER_FUZZ_COVERAGE=ON \
	-DEMBER_FUZZ_SECONDS="$seconds" >/dev/null
targets=$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
# shellcheck disable=SC2086
cmake --build "$build" -j"$(nproc)" --target $targets >/dev/null
prof="$build/coverage"
rm -rf "$prof"
mkdir -p "$prof"
objects=""
for t in $targets; do
	name=${t#fuzz_}
	exe="$build/tests/fuzz/$t"
	corpus="$build/tests/fuzz/corpus_$name"
	# As tests/fuzz/CMakeLists.txt gives them.
	case "$name" in
	elf | gopclntab) max_len="-max_len=4194304" ;;
	*) max_len="" ;;
	esac
	mkdir -p "$corpus"
	if [ "$seconds" -gt 0 ]; then
		LLVM_PROFILE_FILE=/dev/null "$exe" -max_total_time="$seconds" -rss_limit_mb=1024 \
			-timeout=10 $max_len "$corpus" "tests/fuzz/corpus/$name" >"$prof/$name.log" 2>&1 ||
			echo "fuzz-coverage: $t stopped with a finding, see $prof/$name.log" >&2
	fi
	LLVM_PROFILE_FILE="$prof/$name.profraw" "$exe" -runs=0 -rss_limit_mb=2048 $max_len \
		"$corpus" "tests/fuzz/corpus/$name" >>"$prof/$name.log" 2>&1
	echo "$t: $(find "$corpus" "tests/fuzz/corpus/$name" -type f | wc -l) inputs"
	# llvm-cov takes the first program as an argument, the others after -object.
	objects="${objects:+$objects -object }$exe"
done
llvm-profdata merge -sparse "$prof"/*.profraw -o "$prof/all.profdata"
# The parsers of untrusted input, and what they call.
# shellcheck disable=SC2086
llvm-cov report -instr-profile "$prof/all.profdata" $objects \
	symbolizer/symbols/*.c symbolizer/process/*.c symbolizer/unwind/*.c \
	symbolizer/formats/in_*.c symbolizer/export/otlp_transport.c
