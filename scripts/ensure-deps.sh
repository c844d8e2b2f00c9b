#!/usr/bin/env bash
# Installs the Debian packages `vnfm serve` needs before anything starts, from
# the one list internal/deps/packages.list (what each package is for is
# there): the PostgreSQL server binaries for the embedded database (not when
# DATABASE_URL is set) and, when the embedded cloud runs real hosts (as root,
# VNFM_SIMULATOR not off, VNFM_SIMULATOR_HOSTS not off), everything its hosts
# and the sample clusters use (sshd, sudo, haproxy, keepalived, etcd, etcdctl,
# ansible, sshpass...) plus curl and jq for the README's walk-through.
#
# As root on Debian/Ubuntu it installs what is missing, keeping the new
# packages' services from starting on this machine. Otherwise it prints the
# exact command to run and exits 1 (missing walk-through tools only warn).
# Quick and silent when everything is there.
#
# Test seams: ENSURE_DEPS_LIST, ENSURE_DEPS_PG_LIB, ENSURE_DEPS_APT_GET,
# ENSURE_DEPS_DPKG_QUERY, ENSURE_DEPS_POLICY_RC, ENSURE_DEPS_SYSTEMD_DIR.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
list="${ENSURE_DEPS_LIST:-$here/../internal/deps/packages.list}"
pg_lib="${ENSURE_DEPS_PG_LIB:-/usr/lib/postgresql}"
apt_get="${ENSURE_DEPS_APT_GET:-apt-get}"
dpkg_query="${ENSURE_DEPS_DPKG_QUERY:-dpkg-query}"
policy="${ENSURE_DEPS_POLICY_RC:-/usr/sbin/policy-rc.d}"
systemd_dir="${ENSURE_DEPS_SYSTEMD_DIR:-/run/systemd/system}"

say() { echo "ensure-deps: $*" >&2; }

[[ -r $list ]] || { say "cannot read the package list $list"; exit 1; }

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

# installed PACKAGE PROGRAM: dpkg's word on Debian, else the program on PATH.
installed() {
	if [[ $1 == postgresql ]]; then
		have_postgres
		return
	fi
	if command -v "$dpkg_query" >/dev/null 2>&1; then
		# shellcheck disable=SC2016 # ${Status} is dpkg-query's, not ours
		[[ "$("$dpkg_query" -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
		return
	fi
	command -v "$2" >/dev/null 2>&1 || [[ -x "/usr/sbin/$2" ]]
}

uid="$(id -u)"
needs=()
[[ -z "${DATABASE_URL:-}" ]] && needs+=(vnfm tools)
sim="${VNFM_SIMULATOR:-auto}"
cloud=0
if [[ $uid -eq 0 && "${VNFM_SIMULATOR_HOSTS:-auto}" != off && ($sim == on || ($sim == auto && -z "${DATABASE_URL:-}")) ]]; then
	# The embedded cloud onboards every sample, so its hosts need what any
	# sample's clusters use.
	cloud=1
	needs+=(cloud)
fi

missing=() optional=() units=()
while read -r pkg prog unit who _; do
	[[ -z $pkg || $pkg == \#* ]] && continue
	want=0 tool=0
	IFS=, read -r -a whos <<<"$who"
	for w in "${whos[@]}"; do
		case $w in
		vnfm | cloud | tools) [[ " ${needs[*]} " == *" $w "* ]] && want=1 ;;
		*) [[ $cloud -eq 1 ]] && want=1 ;; # a sample's hosts
		esac
		[[ $w == tools ]] && tool=1
	done
	((want)) || continue
	installed "$pkg" "$prog" && continue
	if ((tool)); then optional+=("$pkg"); else missing+=("$pkg"); fi
	[[ $unit != - ]] && units+=("$unit")
done <"$list"

if ((${#missing[@]} + ${#optional[@]} == 0)); then
	exit 0
fi
all=("${missing[@]}" "${optional[@]}")

if ! command -v "$apt_get" >/dev/null 2>&1; then
	say "this is not a Debian/Ubuntu system (no apt-get), so the packages cannot be installed for you."
	say "missing (Debian names; see $list for what each is for): ${all[*]}"
	if [[ " ${missing[*]} " == *" postgresql "* ]]; then
		say "for the database: install the PostgreSQL server binaries and set PG_BINDIR to their bin directory, or set DATABASE_URL"
	fi
	if ((cloud)); then
		say "or run without the embedded cloud's real hosts: VNFM_SIMULATOR_HOSTS=off make run"
	fi
	((${#missing[@]})) && exit 1
	exit 0
fi

if [[ $uid -ne 0 ]]; then
	if ((${#missing[@]})); then
		say "missing Debian packages: ${missing[*]}; install them with:"
		echo "  sudo $apt_get update && sudo $apt_get install -y --no-install-recommends ${all[*]}" >&2
		say "(or run make run as root: it installs them itself)"
		exit 1
	fi
	say "optional: ${optional[*]} for the README's walk-through: sudo $apt_get install -y --no-install-recommends ${optional[*]}"
	exit 0
fi

say "installing ${all[*]} (what for: $list)"
export DEBIAN_FRONTEND=noninteractive
# Keep the packages' maintainer scripts from starting services on this
# machine (sshd on :22, etcd, haproxy, a PostgreSQL cluster on :5432): the VNFM
# starts its own, privately, inside the hosts.
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
if ! "$apt_get" update -qq -o DPkg::Lock::Timeout=300 || ! "$apt_get" install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "${all[@]}"; then
	say "installing failed; run it yourself and read apt's message:"
	echo "  $apt_get update && $apt_get install -y --no-install-recommends ${all[*]}" >&2
	exit 1
fi
# Services installed only for the hosts do not run on this machine at boot.
if ((${#units[@]})) && [[ -d $systemd_dir ]] && command -v systemctl >/dev/null 2>&1; then
	systemctl disable -q "${units[@]}" 2>/dev/null || true
	say "left disabled on this machine (the hosts run their own): ${units[*]}"
fi

if [[ -z "${DATABASE_URL:-}" ]] && ! have_postgres; then
	say "postgresql is installed but no initdb/pg_ctl/postgres found in $pg_lib/*/bin; set PG_BINDIR"
	exit 1
fi
still=()
for p in "${missing[@]}"; do
	prog="$(awk -v p="$p" '$1 == p {print $2}' "$list")"
	installed "$p" "$prog" || still+=("$p")
done
if ((${#still[@]})); then
	say "apt-get finished but these are still not installed: ${still[*]}"
	exit 1
fi
say "done"
