#!/bin/sh
# Builds ember's packages from the committed tree (HEAD, exported with git
# archive: uncommitted changes are not packaged) into dist/.
#   scripts/package.sh deb   dist/ember_VERSION_ARCH.deb, ember-dbgsym_..., .buildinfo, .changes
#   scripts/package.sh rpm   dist/ember-VERSION-1.ARCH.rpm, ember-debuginfo-..., the .src.rpm
# Needs the build dependencies and the packaging tools: sudo scripts/install-deps.sh --packaging
# (dpkg-buildpackage runs without root, fakeroot being unneeded: Rules-Requires-Root: no.)
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
kind=${1:-}
case "$kind" in
deb | rpm) ;;
*)
	echo "usage: $0 deb|rpm" >&2
	exit 2
	;;
esac
version=$(sed -n 's/^project(ember VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "package: no version in CMakeLists.txt's project()" >&2; exit 1; }
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	echo "package: uncommitted changes are not packaged (building HEAD $(git rev-parse --short HEAD))" >&2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-package-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p dist

if [ "$kind" = deb ]; then
	deb_version=$(dpkg-parsechangelog -l debian/changelog -S Version)
	[ "$deb_version" = "$version" ] || {
		echo "package: debian/changelog says $deb_version, CMakeLists.txt $version: add a changelog entry (dch -v $version)" >&2
		exit 1
	}
	git archive --format=tar --prefix="ember-$version/" HEAD | tar -x -C "$work"
	(cd "$work/ember-$version" && dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$work/build.log" 2>&1 || {
		tail -40 "$work/build.log" >&2
		echo "package: dpkg-buildpackage failed (the end of its log is above)" >&2
		exit 1
	}
	for f in "$work"/*.deb "$work"/*.ddeb "$work"/*.buildinfo "$work"/*.changes; do
		[ -e "$f" ] && cp "$f" dist/ && echo "package: dist/$(basename "$f")"
	done
else
	spec_version=$(sed -n 's/^Version: *//p' packaging/rpm/ember.spec)
	[ "$spec_version" = "$version" ] || {
		echo "package: packaging/rpm/ember.spec says $spec_version, CMakeLists.txt $version: update its Version and %changelog" >&2
		exit 1
	}
	mkdir -p "$work/rpm/SOURCES"
	git archive --format=tar.gz --prefix="ember-$version/" -o "$work/rpm/SOURCES/ember-$version.tar.gz" HEAD
	# On an RPM distribution rpmbuild checks BuildRequires and makes the debuginfo
	# package by itself. Elsewhere (Debian's rpmbuild: an empty RPM database, no
	# redhat-rpm-config) the build dependencies are install-deps.sh's, and
	# debuginfo is asked for.
	packager=$(sed -n 's/^Maintainer: *//p' debian/control)
	set -- --define "_topdir $work/rpm" --define "_smp_mflags -j$(nproc)" --define "packager $packager"
	if ! rpm -q rpm >/dev/null 2>&1; then
		set -- "$@" --nodeps --define "_enable_debug_packages 1" --define "ember_debug_package 1"
	fi
	rpmbuild -ba "$@" packaging/rpm/ember.spec >"$work/build.log" 2>&1 || {
		tail -40 "$work/build.log" >&2
		echo "package: rpmbuild failed (the end of its log is above)" >&2
		exit 1
	}
	for f in "$work"/rpm/RPMS/*/*.rpm "$work"/rpm/SRPMS/*.rpm; do
		cp "$f" dist/ && echo "package: dist/$(basename "$f")"
	done
fi
echo "package: built from $(git rev-parse --short HEAD) in $top/dist"
