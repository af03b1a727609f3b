#!/bin/sh
# Merges what fuzzing found (BUILD/tests/fuzz/corpus_NAME, where the fuzz tests and
# scripts/fuzz-coverage.sh keep it) into the corpus kept in the repository
# (tests/fuzz/corpus/NAME): libFuzzer's -merge=1 adds only the inputs that reach code the
# corpus does not, so it grows with what is new. Commit tests/fuzz/corpus afterwards.
# Usage: scripts/fuzz-merge.sh [BUILD_DIR]   (default build-fuzz: a -DEMBER_FUZZ=ON build)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
for t in $(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//'); do
	name=${t#fuzz_}
	exe="$build/tests/fuzz/$t"
	found="$build/tests/fuzz/corpus_$name"
	[ -x "$exe" ] && [ -d "$found" ] || continue
	before=$(find "tests/fuzz/corpus/$name" -type f | wc -l)
	mkdir -p "tests/fuzz/corpus/$name"
	LLVM_PROFILE_FILE=/dev/null "$exe" -merge=1 -rss_limit_mb=2048 -max_len=4194304 \
		"tests/fuzz/corpus/$name" "$found" >"$build/tests/fuzz/merge_$name.log" 2>&1 || {
		echo "fuzz-merge: $t failed, see $build/tests/fuzz/merge_$name.log" >&2
		exit 1
	}
	echo "$t: $before -> $(find "tests/fuzz/corpus/$name" -type f | wc -l) inputs"
done
