#!/bin/sh
# Line coverage the fuzz targets reach, target by target: each target is run over its corpus
# (the seeds in tests/fuzz/corpus/NAME and what fuzzing kept in BUILD/tests/fuzz/corpus_NAME)
# without mutating, with clang's source-based coverage, and llvm-cov reports the lines of the
# sources that target is there for (TARGET_SOURCES below), with libFuzzer's cov and ft of the
# same corpus and how many inputs fuzzing added to it; then the lines over every target.
# BUILD is a fuzz build with coverage (-DEMBER_FUZZ=ON -DEMBER_FUZZ_COVERAGE=ON): made here
# when it is not one. Optionally each target is fuzzed first for SECONDS.
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
if ! grep -q '^EMBER_FUZZ_COVERAGE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DEMBER_FUZZ=ON -DEMBER_FUZZ_COVERAGE=ON \
		-DEMBER_FUZZ_SECONDS="$seconds" >/dev/null
fi
targets=$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
# shellcheck disable=SC2086
cmake --build "$build" -j"$(nproc)" --target $targets >/dev/null

# The sources each target is there for.
target_sources() {
	case "$1" in
	in_pprof) echo symbolizer/formats/in_pprof.c ;;
	in_folded) echo symbolizer/formats/in_folded.c ;;
	ehframe) echo symbolizer/unwind/cfi.c ;;
	stack_unwind) echo symbolizer/unwind/stack_unwind.c ;;
	elf) echo symbolizer/symbols/objfile.c symbolizer/symbols/elf_syms.c symbolizer/symbols/dwarf.c \
		symbolizer/symbols/debuginfo.c symbolizer/symbols/plt.c symbolizer/symbols/dynsym.c ;;
	gopclntab) echo symbolizer/symbols/gopclntab.c ;;
	maps) echo symbolizer/process/maps_parser.c ;;
	kallsyms) echo symbolizer/symbols/kallsyms.c ;;
	perfmap) echo symbolizer/symbols/perfmap.c ;;
	demangle) echo symbolizer/symbols/demangle.c ;;
	cgroup) echo symbolizer/process/container.c ;;
	otlp_answer) echo symbolizer/export/otlp_transport.c ;;
	python_lines) echo symbolizer/interp/python_lines.c ;;
	python_code) echo symbolizer/interp/python_code.c ;;
	python_elf) echo symbolizer/interp/python_elf.c symbolizer/interp/elf_image.c ;;
	ruby_elf) echo symbolizer/interp/ruby_elf.c symbolizer/interp/elf_image.c ;;
	ruby_frames) echo symbolizer/interp/ruby_frames.c ;;
	php_elf) echo symbolizer/interp/php_elf.c symbolizer/interp/elf_image.c ;;
	php_frames) echo symbolizer/interp/php_frames.c ;;
	perl_elf) echo symbolizer/interp/perl_elf.c symbolizer/interp/elf_image.c ;;
	perl_frames) echo symbolizer/interp/perl_frames.c ;;
	jvm_structs) echo symbolizer/interp/jvm_structs.c ;;
	jvm_lines) echo symbolizer/interp/jvm_lines.c ;;
	jvm_nmethod) echo symbolizer/interp/jvm_nmethod.c symbolizer/interp/jvm_lines.c ;;
	jvm_signature) echo symbolizer/interp/jvm_method.c ;;
	v8_heap) echo symbolizer/interp/v8_heap.c symbolizer/interp/v8_function.c symbolizer/interp/v8_code.c symbolizer/interp/v8_positions.c ;;
	proto) echo ipc/proto.c ;;
	table_loader) echo collector/table_loader.c ;;
	peer) echo collector/peer.c ;;
	broker_maps) echo collector/broker.c ;;
	*) echo "fuzz-coverage: no sources named for fuzz_$1 (scripts/fuzz-coverage.sh)" >&2; exit 2 ;;
	esac
}

prof="$build/coverage"
rm -rf "$prof"
mkdir -p "$prof"
objects=""
summary=""
found=0
for t in $targets; do
	name=${t#fuzz_}
	exe="$build/tests/fuzz/$t"
	corpus="$build/tests/fuzz/corpus_$name"
	# As tests/fuzz/CMakeLists.txt gives them.
	case "$name" in
	elf | gopclntab) max_len="-max_len=4194304" ;;
	proto) max_len="-max_len=8192" ;;
	table_loader | peer | broker_maps) max_len="-max_len=65536" ;;
	*) max_len="" ;;
	esac
	mkdir -p "$corpus"
	if [ "$seconds" -gt 0 ]; then
		# shellcheck disable=SC2086
		LLVM_PROFILE_FILE=/dev/null "$exe" -max_total_time="$seconds" -rss_limit_mb=1024 \
			-timeout=10 $max_len "$corpus" "tests/fuzz/corpus/$name" >"$prof/$name.log" 2>&1 ||
			echo "fuzz-coverage: $t stopped with a finding, see $prof/$name.log" >&2
	fi
	# shellcheck disable=SC2086
	LLVM_PROFILE_FILE="$prof/$name.profraw" "$exe" -runs=0 -rss_limit_mb=2048 $max_len \
		"$corpus" "tests/fuzz/corpus/$name" >>"$prof/$name.log" 2>&1
	llvm-profdata merge -sparse "$prof/$name.profraw" -o "$prof/$name.profdata"
	# shellcheck disable=SC2046
	line=$(llvm-cov report -instr-profile "$prof/$name.profdata" "$exe" $(target_sources "$name") |
		awk '$1 == "TOTAL" { print $10 " of " $8 " lines (" $9 " missed)" }')
	# libFuzzer's own measure of the same corpus, from the end of the run over it: cov, the
	# edges reached in the whole program, and ft, its features (edges by hit count and the
	# like), what -merge=1 compares when it decides whether an input is new.
	cov=$(grep 'DONE *cov:' "$prof/$name.log" | tail -n1 |
		sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/cov \1 ft \2/p')
	kept=$(find "tests/fuzz/corpus/$name" -type f | wc -l)
	new=$(find "$corpus" -type f | wc -l)
	found=$((found + new))
	summary="$summary$(printf '%-22s %4d+%-4d inputs  %-18s %s (%s)' "$t" "$kept" "$new" \
		"${cov:-no cov/ft}" "${line:-no lines}" "$(target_sources "$name" | tr ' ' ',')")
"
	# llvm-cov takes the first program as an argument, the others after -object.
	objects="${objects:+$objects -object }$exe"
done
echo "fuzz-coverage: each target over its corpus (kept in tests/fuzz/corpus + found by fuzzing in" \
	"$build), libFuzzer's cov/ft, the lines of its sources covered:"
printf '%s' "$summary"
if [ "$found" -gt 0 ]; then
	echo "fuzz-coverage: $found inputs found by fuzzing, in $build/tests/fuzz/corpus_*:" \
		"scripts/fuzz-merge.sh $build adds those that reach new code to tests/fuzz/corpus (commit it)"
fi
llvm-profdata merge -sparse "$prof"/*.profraw -o "$prof/all.profdata"
echo "fuzz-coverage: every target together, by file:"
# shellcheck disable=SC2046,SC2086
llvm-cov report -instr-profile "$prof/all.profdata" $objects \
	$(for t in $targets; do target_sources "${t#fuzz_}"; done | tr ' ' '\n' | sort -u)
