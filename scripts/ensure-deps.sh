#!/usr/bin/env bash
# Makes sure the Debian packages that `vnfm serve` needs at run time are
# installed: the PostgreSQL server binaries for the embedded database (not
# needed when DATABASE_URL points at a server).
#
# As root it installs what is missing; otherwise it prints the command to run
# and exits 1. Quick and silent when everything is there.
set -euo pipefail

# Where Debian puts one bin/ per PostgreSQL major version (overridable for tests).
pg_lib="${ENSURE_DEPS_PG_LIB:-/usr/lib/postgresql}"

# PostgreSQL server binaries: PG_BINDIR, or $pg_lib/<major>/bin.
have_postgres() {
	local dir
	for dir in ${PG_BINDIR:+"$PG_BINDIR"} "$pg_lib"/*/bin; do
		if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" && -x "$dir/postgres" ]]; then
			return 0
		fi
	done
	return 1
}

missing=()
if [[ -z "${DATABASE_URL:-}" ]] && ! have_postgres; then
	missing+=(postgresql)
fi

if ((${#missing[@]} == 0)); then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-deps: missing ${missing[*]}, and this is not a Debian/Ubuntu system: install the PostgreSQL server binaries and set PG_BINDIR, or set DATABASE_URL" >&2
	exit 1
fi

if [[ "$(id -u)" -ne 0 ]]; then
	echo "ensure-deps: missing Debian packages: ${missing[*]}; install them with:" >&2
	echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
	exit 1
fi

echo "ensure-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"

if [[ -z "${DATABASE_URL:-}" ]] && ! have_postgres; then
	echo "ensure-deps: postgresql is installed but no initdb/pg_ctl/postgres found in $pg_lib/*/bin" >&2
	exit 1
fi
