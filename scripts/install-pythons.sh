#!/bin/sh
# Installs the CPython versions the tests run Python frames against (tests/integration/
# test_python.py: README's "CPython 3.6 to 3.13", and a CPython 2 that must be named
# unsupported), with pyenv, each built from source with a shared libpython (as most builds
# are; Debian's python3.11, with libpython linked into the executable, comes from
# install-deps.sh). Versions present are kept: a later run builds nothing. The first run
# builds nine interpreters from source: tens of minutes.
# Usage: scripts/install-pythons.sh [--list]   (--list prints the versions and exits)
# PYENV_ROOT (default ~/.pyenv) is where pyenv and the interpreters live.
set -eu
# The claimed range, one release each (the versions test_python.py counts).
VERSIONS="2.7.18 3.6.15 3.7.16 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0"
if [ "${1:-}" = "--list" ]; then
	echo "$VERSIONS"
	exit 0
fi
PYENV_ROOT=${PYENV_ROOT:-$HOME/.pyenv}
export PYENV_ROOT
missing=""
for v in $VERSIONS; do
	[ -x "$PYENV_ROOT/versions/$v/bin/python${v%.*}" ] || missing="$missing $v"
done
if [ -z "$missing" ]; then
	echo "install-pythons: all present in $PYENV_ROOT/versions: $VERSIONS"
	exit 0
fi
echo "install-pythons: building$missing (pyenv, in $PYENV_ROOT)"
if [ "$(id -u)" -eq 0 ]; then
	# What CPython's build needs (Debian package names).
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		build-essential git libssl-dev zlib1g-dev libbz2-dev libreadline-dev libsqlite3-dev \
		libncursesw5-dev xz-utils tk-dev libxml2-dev libffi-dev liblzma-dev
fi
if [ ! -x "$PYENV_ROOT/bin/pyenv" ]; then
	git clone --depth 1 https://github.com/pyenv/pyenv.git "$PYENV_ROOT"
fi
for v in $missing; do
	PYTHON_CONFIGURE_OPTS="--enable-shared" "$PYENV_ROOT/bin/pyenv" install --skip-existing "$v"
done
echo "install-pythons: done"
