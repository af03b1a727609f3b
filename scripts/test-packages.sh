#!/bin/sh
# The packaging tests: builds the .deb and .rpm from the committed tree
# (scripts/package.sh), then checks them as users get them (tests/packaging):
#   test_deb.py  lintian; installed into a fresh Debian 12 tree booted with
#                systemd-nspawn: units enabled, running, confined, rated by
#                systemd-analyze security; conffile, profiles, reload, the OTLP
#                drop-in, a --unit selection, reinstall, stop, purge
#   test_rpm.py  rpmlint; payload; scriptlets with rpm --root in a scratch tree
#   test_pod.py  the image (Containerfile, base made with debootstrap), the
#                Kubernetes manifests with podman kube play and as podman
#                pod create + podman run --pid host
# Needs root, deb.debian.org (debootstrap, once; trees cached in
# /var/tmp/ember-pkgtest) and about 10 minutes.
# Usage: sudo scripts/test-packages.sh [test_deb|test_rpm|test_pod]...
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "test-packages: run as root (sudo $0): debootstrap, nspawn and podman need it" >&2
	exit 1
fi
scripts/install-deps.sh --packaging
# The Python the integration tests use (python3-protobuf, python3-yaml).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
rm -rf dist
scripts/package.sh deb
scripts/package.sh rpm
tests=${*:-test_deb test_rpm test_pod}
status=0
# Each failed test, with its reason, listed again at the end (pkglib.run_tests).
EMBER_PKG_FAILURES=$(mktemp)
export EMBER_PKG_FAILURES
trap 'rm -f "$EMBER_PKG_FAILURES"' EXIT
for t in $tests; do
	echo "== tests/packaging/$t.py"
	start=$(date +%s)
	(cd tests/packaging && "$py" "$t.py") || status=1
	echo "   ($(($(date +%s) - start))s)"
done
if [ "$status" -ne 0 ]; then
	if [ -s "$EMBER_PKG_FAILURES" ]; then
		echo "test-packages: failed:" >&2
		cat "$EMBER_PKG_FAILURES" >&2
	fi
	echo "test-packages: some tests failed (see above)" >&2
fi
exit "$status"
