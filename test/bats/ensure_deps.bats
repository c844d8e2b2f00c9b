#!/usr/bin/env bats
# Tests of scripts/ensure-deps.sh against a fake Debian: apt-get and
# dpkg-query are stubs (ENSURE_DEPS_APT_GET / ENSURE_DEPS_DPKG_QUERY) whose
# "installed" packages are files in $STUB_STATE, `id` and `systemctl` are
# stubs on PATH, and the PostgreSQL binaries live in a temporary directory.
# Nothing on the machine is installed, removed or started. Run: bats test/bats

SCRIPT="$BATS_TEST_DIRNAME/../../scripts/ensure-deps.sh"
LIST="$BATS_TEST_DIRNAME/../../internal/deps/packages.list"

setup() {
	STUBS="$BATS_TEST_TMPDIR/stubs"
	export STUB_STATE="$BATS_TEST_TMPDIR/installed" STUB_LOG="$BATS_TEST_TMPDIR/calls.log"
	mkdir -p "$STUBS" "$STUB_STATE" "$BATS_TEST_TMPDIR/pg" "$BATS_TEST_TMPDIR/systemd"
	touch "$STUB_LOG"
	export ENSURE_DEPS_PG_LIB="$BATS_TEST_TMPDIR/pg" ENSURE_DEPS_POLICY_RC="$BATS_TEST_TMPDIR/policy-rc.d"
	export ENSURE_DEPS_APT_GET="$STUBS/apt-get" ENSURE_DEPS_DPKG_QUERY="$STUBS/dpkg-query"
	export ENSURE_DEPS_SYSTEMD_DIR="$BATS_TEST_TMPDIR/systemd"
	export STUB_UID=0
	unset DATABASE_URL VNFM_SIMULATOR VNFM_SIMULATOR_HOSTS PG_BINDIR

	stub apt-get <<-'EOF2'
		echo "apt-get $*" >>"$STUB_LOG"
		[ -e "$ENSURE_DEPS_POLICY_RC" ] || { echo "policy-rc.d missing during apt-get" >>"$STUB_LOG"; exit 1; }
		[ -z "${STUB_APT_FAIL:-}" ] || { echo "E: Unable to locate package" >&2; exit 100; }
		if [ "$1" = install ]; then
			for a in "$@"; do
				case $a in -* | install) ;; *) touch "$STUB_STATE/$a"
					[ "$a" = postgresql ] && mkdir -p "$ENSURE_DEPS_PG_LIB/15/bin" && touch "$ENSURE_DEPS_PG_LIB/15/bin/"{initdb,pg_ctl,postgres} && chmod +x "$ENSURE_DEPS_PG_LIB/15/bin/"*
					;; esac
			done
		fi
		exit 0
	EOF2
	stub dpkg-query <<-'EOF2'
		pkg="${*: -1}"
		[ -e "$STUB_STATE/$pkg" ] && printf 'install ok installed' && exit 0
		echo "dpkg-query: no packages found matching $pkg" >&2; exit 1
	EOF2
	stub id <<-'EOF2'
		echo "$STUB_UID"
	EOF2
	stub systemctl <<-'EOF2'
		echo "systemctl $*" >>"$STUB_LOG"
	EOF2
	export PATH="$STUBS:$PATH"
}

stub() {
	{ echo '#!/bin/bash'; cat; } >"$STUBS/$1"
	chmod +x "$STUBS/$1"
}

# every package of the list
all_packages() { awk '!/^#/ && NF {print $1}' "$LIST"; }

install_all() {
	local p
	for p in $(all_packages); do touch "$STUB_STATE/$p"; done
	mkdir -p "$ENSURE_DEPS_PG_LIB/15/bin" && touch "$ENSURE_DEPS_PG_LIB/15/bin/"{initdb,pg_ctl,postgres} && chmod +x "$ENSURE_DEPS_PG_LIB/15/bin/"*
}

@test "root on a bare Debian: installs every package of the list in one apt-get, services kept from starting and left disabled" {
	run "$SCRIPT"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^apt-get install' "$STUB_LOG")" -eq 1 ]
	line="$(grep '^apt-get install' "$STUB_LOG")"
	for p in $(all_packages); do
		[[ " $line " == *" $p "* ]] || { echo "not installed: $p in: $line"; false; }
	done
	[[ $line == *--no-install-recommends* ]]
	grep -q '^apt-get update' "$STUB_LOG"
	! grep -q 'policy-rc.d missing' "$STUB_LOG"
	[ ! -e "$ENSURE_DEPS_POLICY_RC" ] # removed again
	grep -q '^systemctl disable -q haproxy keepalived etcd$' "$STUB_LOG"
	[[ $output == *"installing "* && $output == *"done"* ]]
}

@test "the packages the newcomer of issue 13 had to install by hand are all in the list" {
	for p in sudo haproxy keepalived etcd-server etcd-client openssh-server iproute2 ansible sshpass; do
		all_packages | grep -qx "$p" || { echo "missing from the list: $p"; false; }
	done
}

@test "everything present: silent, no apt-get" {
	install_all
	run "$SCRIPT"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -s "$STUB_LOG" ]
}

@test "only what is missing is installed" {
	install_all
	rm "$STUB_STATE/sudo" "$STUB_STATE/etcd-client"
	run "$SCRIPT"
	[ "$status" -eq 0 ]
	grep -qx 'apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends sudo etcd-client' "$STUB_LOG"
	! grep -q systemctl "$STUB_LOG" # no service among them
}

@test "not root: stops with the exact command, installs nothing" {
	export STUB_UID=1000
	run "$SCRIPT"
	[ "$status" -eq 1 ]
	[[ $output == *"sudo $ENSURE_DEPS_APT_GET update && sudo $ENSURE_DEPS_APT_GET install -y --no-install-recommends postgresql curl jq"* ]] || { echo "$output"; false; }
	[[ $output != *haproxy* ]] # without root there are no real hosts to serve
	! grep -q '^apt-get' "$STUB_LOG"
}

@test "not root with the database present: only the walk-through tools are suggested, serving goes on" {
	install_all
	rm "$STUB_STATE/jq"
	export STUB_UID=1000
	run "$SCRIPT"
	[ "$status" -eq 0 ]
	[[ $output == *"optional: jq"* ]]
	! grep -q '^apt-get' "$STUB_LOG"
}

@test "not Debian: says what is missing and how to go on without it" {
	export ENSURE_DEPS_APT_GET="$BATS_TEST_TMPDIR/no-such-apt-get" ENSURE_DEPS_DPKG_QUERY="$BATS_TEST_TMPDIR/no-dpkg-query"
	run "$SCRIPT"
	[ "$status" -eq 1 ]
	[[ $output == *"not a Debian/Ubuntu system"* && $output == *"PG_BINDIR"* && $output == *"VNFM_SIMULATOR_HOSTS=off"* ]] || { echo "$output"; false; }
}

@test "DATABASE_URL without the simulator: nothing is needed" {
	export DATABASE_URL=postgres://db/vnfm
	run "$SCRIPT"
	[ "$status" -eq 0 ]
	[ ! -s "$STUB_LOG" ]
}

@test "hosts off: only the VNFM's own packages" {
	export VNFM_SIMULATOR_HOSTS=off
	run "$SCRIPT"
	[ "$status" -eq 0 ]
	line="$(grep '^apt-get install' "$STUB_LOG")"
	[[ $line == *" postgresql curl jq" ]] || { echo "$line"; false; }
}

@test "apt-get fails: exit 1 with the command to run by hand" {
	export STUB_APT_FAIL=1
	run "$SCRIPT"
	[ "$status" -eq 1 ]
	[[ $output == *"installing failed"* && $output == *"install -y --no-install-recommends postgresql"* ]]
}

@test "an existing policy-rc.d is left alone" {
	printf '#!/bin/sh\nexit 101\n' >"$ENSURE_DEPS_POLICY_RC"
	run "$SCRIPT"
	[ "$status" -eq 0 ]
	[ -e "$ENSURE_DEPS_POLICY_RC" ]
}
