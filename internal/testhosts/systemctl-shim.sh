#!/bin/bash
# systemctl stand-in for test hosts (internal/testhosts), which have no systemd.
# Installed as /usr/bin/systemctl in each host's own /usr layer only.
# Units with an /etc/init.d script are driven through it; other units run the
# ExecStart= of their unit file in the background with a pid file.
set -u
quiet=0 now=0 verb="" units=()
for a in "$@"; do
	case $a in
	-q | --quiet) quiet=1 ;;
	--now) now=1 ;;
	--no-pager | --no-block | --system | -l | --full | --no-ask-password | --no-legend | --plain) ;;
	-*) ;;
	*) if [ -z "$verb" ]; then verb=$a; else units+=("${a%.service}"); fi ;;
	esac
done
say() { [ "$quiet" = 1 ] || echo "$@"; }
RUN=/run/th-units EN=/var/lib/th-units/enabled
mkdir -p "$RUN" "$EN" 2>/dev/null || true

unit_file() {
	local f
	for f in "/etc/systemd/system/$1.service" "/lib/systemd/system/$1.service" "/usr/lib/systemd/system/$1.service"; do
		[ -f "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}
daemon_of() { case $1 in ssh) echo sshd ;; *) echo "$1" ;; esac; }
is_active() {
	if [ -x "/etc/init.d/$1" ]; then pgrep -x "$(daemon_of "$1")" >/dev/null; return; fi
	local p
	[ -f "$RUN/$1.pid" ] && p=$(cat "$RUN/$1.pid") && [ -n "$p" ] && [ -d "/proc/$p" ]
}
wait_gone() { local _; for _ in $(seq 50); do is_active "$1" || return 0; sleep 0.1; done; return 1; }
do_start() {
	local u=$1 f cmd
	is_active "$u" && return 0
	if [ -x "/etc/init.d/$u" ]; then "/etc/init.d/$u" start >/dev/null; return; fi
	f=$(unit_file "$u") || { echo "Failed to start $u.service: Unit $u.service not found." >&2; return 5; }
	cmd=$(sed -n 's/^ExecStart=[-@+!]*//p' "$f" | head -1)
	[ -n "$cmd" ] || { echo "Unit $u.service has no ExecStart=" >&2; return 1; }
	(
		set -a
		# shellcheck disable=SC1090
		while read -r ef; do ef=${ef#-}; [ -f "$ef" ] && . "$ef"; done < <(sed -n 's/^EnvironmentFile=//p' "$f")
		while read -r ev; do eval "export $ev"; done < <(sed -n 's/^Environment=//p' "$f")
		set +a
		setsid sh -c "echo \$\$ > $RUN/$u.pid; exec $cmd" >>"/var/log/$u.log" 2>&1 </dev/null &
	)
	local _
	for _ in $(seq 10); do [ -s "$RUN/$u.pid" ] && break; sleep 0.1; done
	sleep 0.2
	is_active "$u" || { echo "Job for $u.service failed." >&2; return 1; }
}
do_stop() {
	local u=$1 p
	if [ -x "/etc/init.d/$u" ]; then "/etc/init.d/$u" stop >/dev/null; wait_gone "$u"; return 0; fi
	[ -f "$RUN/$u.pid" ] || return 0
	p=$(cat "$RUN/$u.pid")
	kill "$p" 2>/dev/null
	wait_gone "$u" || kill -9 "$p" 2>/dev/null
	rm -f "$RUN/$u.pid"
}
known() { [ -x "/etc/init.d/$1" ] || unit_file "$1" >/dev/null; }

rc=0
case $verb in
start | stop | restart | try-restart | reload | reload-or-restart | enable | disable | mask | unmask | is-enabled | is-active | is-failed | status) ;;
daemon-reload | daemon-reexec | reset-failed) exit 0 ;;
*) echo "systemctl (testhosts shim): unsupported verb '$verb'" >&2; exit 1 ;;
esac
for u in "${units[@]}"; do
	case $verb in
	start) do_start "$u" || rc=$? ;;
	stop) do_stop "$u" || rc=$? ;;
	restart) do_stop "$u"; do_start "$u" || rc=$? ;;
	try-restart) if is_active "$u"; then do_stop "$u"; do_start "$u" || rc=$?; fi ;;
	reload | reload-or-restart)
		if is_active "$u" && [ -x "/etc/init.d/$u" ]; then "/etc/init.d/$u" reload >/dev/null || rc=$?
		else do_stop "$u"; do_start "$u" || rc=$?; fi ;;
	enable)
		known "$u" || { echo "Failed to enable unit: Unit file $u.service does not exist." >&2; rc=1; continue; }
		touch "$EN/$u"; [ "$now" = 1 ] && { do_start "$u" || rc=$?; } ;;
	disable) rm -f "$EN/$u"; [ "$now" = 1 ] && do_stop "$u" ;;
	mask | unmask) ;;
	is-enabled) if [ -e "$EN/$u" ]; then say enabled; else say disabled; rc=1; fi ;;
	is-active) if is_active "$u"; then say active; else say inactive; rc=3; fi ;;
	is-failed) if is_active "$u"; then say active; rc=1; else say inactive; fi ;;
	status)
		if is_active "$u"; then say "● $u.service - $u"; say "     Active: active (running)"
		else say "● $u.service - $u"; say "     Active: inactive (dead)"; rc=3; fi ;;
	esac
done
exit $rc
