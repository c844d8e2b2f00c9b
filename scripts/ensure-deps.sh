#!/usr/bin/env bash
# Makes sure the Debian packages that `vnfm serve` needs at run time are
# installed: the PostgreSQL server binaries for the embedded database (not
# needed when DATABASE_URL points at a server) and, for the embedded cloud's
# real hosts, openssh-server, iproute2 and etcd.
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

# The embedded OpenStack simulator's real hosts (as root, unless turned off)
# run a real sshd in network namespaces made with iproute2; the Kubernetes
# stand-in of HA clusters keeps its state in etcd.
sim="${VNFM_SIMULATOR:-auto}"
if [[ "$(id -u)" -eq 0 && "${VNFM_SIMULATOR_HOSTS:-auto}" != off && ( "$sim" == on || ( "$sim" == auto && -z "${DATABASE_URL:-}" ) ) ]]; then
	[[ -x /usr/sbin/sshd ]] || missing+=(openssh-server)
	command -v ip >/dev/null 2>&1 || missing+=(iproute2)
	command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
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
# Keep the packages' maintainer scripts from starting services (sshd on :22,
# etcd, a PostgreSQL cluster on :5432): the VNFM starts its own, privately.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"

if [[ -z "${DATABASE_URL:-}" ]] && ! have_postgres; then
	echo "ensure-deps: postgresql is installed but no initdb/pg_ctl/postgres found in $pg_lib/*/bin" >&2
	exit 1
fi
