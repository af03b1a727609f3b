#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the Go helpers of the interop tests (every folder here with a go.mod)
# into CACHE/bin/<folder> and prints that bin directory, its only stdout line.
#
# usage: tests/interop/build.sh [CACHE_DIR]
#   CACHE_DIR defaults to $EMBER_INTEROP_CACHE or /var/cache/ember/interop, and
#   to ${XDG_CACHE_HOME:-$HOME/.cache}/ember/interop when that is not writable.
#
# Everything Go downloads or builds stays in the cache, so CI pays for the
# first build only; a helper is rebuilt only when its sources or the Go
# version change. Needs Go >= the highest `go` line of the go.mod files; when
# none is installed, it fetches the pinned Go below from the Go module proxy.
set -eu

GO_PIN=1.26.8
# sha256 of golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64.zip, the same zip
# that `go mod download` verified against the Go checksum database.
GO_PIN_SHA256_linux_amd64=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7

say() { echo "interop: $*" >&2; }
die() { say "error: $*"; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)

# --- the cache --------------------------------------------------------------
writable() { mkdir -p "$1" 2>/dev/null && [ -w "$1" ]; }
if [ $# -ge 1 ]; then
	cache=$1
	writable "$cache" || die "cache dir $cache is not writable"
elif [ -n "${EMBER_INTEROP_CACHE:-}" ]; then
	cache=$EMBER_INTEROP_CACHE
	writable "$cache" || die "EMBER_INTEROP_CACHE=$cache is not writable"
else
	cache=/var/cache/ember/interop
	if ! writable "$cache"; then
		cache=${XDG_CACHE_HOME:-$HOME/.cache}/ember/interop
		writable "$cache" || die "neither /var/cache/ember/interop nor $cache is writable; pass a CACHE_DIR"
	fi
fi
cache=$(cd "$cache" && pwd)
mkdir -p "$cache/bin"

# Two test runs building at once would race on the same files.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$cache/.lock"
	flock 9
fi

# --- a Go that is new enough -------------------------------------------------
# "1.26.8" >= "1.25"? Compares dotted numbers; a suffix like rc1 is dropped.
version_ge() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		na = split(a, x, "."); nb = split(b, y, ".")
		for (i = 1; i <= 3; i++) { p = x[i] + 0; q = y[i] + 0
			if (p != q) exit !(p > q) }
		exit 0 }'
}

need=1.25
for m in "$here"/*/go.mod; do
	[ -f "$m" ] || die "no Go module under $here"
	v=$(awk '$1 == "go" { print $2; exit }' "$m")
	if [ -n "$v" ] && ! version_ge "$need" "$v"; then need=$v; fi
done

# Go must not fetch a toolchain of its own (Debian's 1.19 cannot, newer ones
# would do it behind our back): this script chooses the toolchain.
export GOTOOLCHAIN=local

go_version() { "$1" env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9][0-9.]*\).*/\1/p'; }

gobin='' old=''
pinned=$cache/go$GO_PIN/bin/go
for g in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go "$pinned"; do
	{ [ -n "$g" ] && [ -x "$g" ]; } || continue
	v=$(go_version "$g")
	if [ -n "$v" ] && version_ge "$v" "$need"; then gobin=$g; break; fi
	old="$old $g (go$v)"
done

if [ -z "$gobin" ]; then
	[ -z "$old" ] || say "too old for go$need:$old"
	version_ge "$GO_PIN" "$need" || die "the go.mod files need go$need but this script pins go$GO_PIN: raise GO_PIN"
	arch=$(uname -m)
	case $arch in
	x86_64 | amd64) sum=$GO_PIN_SHA256_linux_amd64 goarch=amd64 ;;
	*) die "no Go >= $need found and no pinned Go for $arch: install Go $need or newer (https://go.dev/dl/) and put it on PATH" ;;
	esac
	proxy=${GOPROXY:-https://proxy.golang.org}
	proxy=${proxy%%[,|]*}
	case $proxy in http://* | https://*) ;; *) proxy=https://proxy.golang.org ;; esac
	ver=v0.0.1-go$GO_PIN.linux-$goarch
	url=$proxy/golang.org/toolchain/@v/$ver.zip
	zip=$cache/dl/go$ver.zip
	mkdir -p "$cache/dl"
	say "no Go >= $need found; downloading go$GO_PIN (70 MB) from $url"
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 3 -o "$zip.part" "$url" || dl=fail
	else
		python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' \
			"$url" "$zip.part" || dl=fail
	fi
	[ "${dl:-}" != fail ] || die "cannot download $url: no network to the Go module proxy? Install Go $need or newer, or set GOPROXY to a reachable proxy"
	got=$(sha256sum "$zip.part" | cut -d' ' -f1)
	[ "$got" = "$sum" ] || { rm -f "$zip.part"; die "$url has sha256 $got, expected $sum: refusing to use it"; }
	mv "$zip.part" "$zip"
	# Python's zipfile is always there (unzip may not be); it drops the
	# permission bits, so they are set back from the archive.
	rm -rf "$cache/go.tmp"
	python3 - "$zip" "$cache/go.tmp" <<-'EOF'
		import os, sys, zipfile
		with zipfile.ZipFile(sys.argv[1]) as z:
		    for i in z.infolist():
		        p = z.extract(i, sys.argv[2])
		        if i.external_attr >> 16:
		            os.chmod(p, (i.external_attr >> 16) & 0o777)
	EOF
	rm -rf "$cache/go$GO_PIN"
	mv "$cache/go.tmp/golang.org/toolchain@$ver" "$cache/go$GO_PIN"
	rm -rf "$cache/go.tmp" "$zip"
	gobin=$pinned
fi
gover=go$(go_version "$gobin")

# --- build each module --------------------------------------------------------
# Nothing goes to $HOME or the user's Go caches; -modcacherw lets `rm -rf`
# clear the cache; -mod=readonly keeps go.mod and go.sum as committed; no cgo
# so that no C compiler is needed and the binaries are static.
export GOPATH="$cache/gopath" GOMODCACHE="$cache/gomod" GOCACHE="$cache/gobuild"
export GOFLAGS="-mod=readonly -modcacherw -buildvcs=false" CGO_ENABLED=0 GOWORK=off
for m in "$here"/*/go.mod; do
	d=${m%/go.mod}
	name=${d##*/}
	stamp=$cache/bin/.$name.stamp
	new=$( (cd "$d" && echo "$gover $GOFLAGS -trimpath" &&
		find . -name go.mod -o -name go.sum -o -name '*.go' | LC_ALL=C sort |
		while read -r f; do echo "$f" && cat "$f"; done) | sha256sum | cut -d' ' -f1)
	if [ -x "$cache/bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$new" ]; then
		continue
	fi
	if [ -f "$stamp" ]; then why="sources or Go changed"; else why="first time: a few minutes"; fi
	say "building $name with $gover ($why)"
	(cd "$d" && "$gobin" mod download >&2) ||
		die "cannot download the modules of $name: no network to the Go module proxy (${GOPROXY:-https://proxy.golang.org})? Retry with network, or set GOPROXY"
	(cd "$d" && "$gobin" build -trimpath -o "$cache/bin/$name.tmp" . >&2) ||
		die "building $name failed (see above)"
	mv "$cache/bin/$name.tmp" "$cache/bin/$name"
	echo "$new" >"$stamp"
done
echo "$cache/bin"
