#!/bin/bash
# PID 1 of one test host (internal/testhosts). Runs inside the host's own
# network namespace and a fresh mount, UTS, IPC and PID namespace.
#   $1 = hostname, $2 = the host's state directory (see host.go for its layout)
# The Go side pre-seeds the overlay upper directories (hostname, hosts,
# resolv.conf, machine-id, host keys, sshd drop-in, sudoers, the accounts in
# passwd/shadow/group) and the private /home and /root on the first boot;
# this script mounts, starts sshd and, like systemd at boot, the services
# enabled through the systemctl stand-in (a host booted again from a saved
# disk comes back with its services).
set -u
H=$1
S=$2

fail() { echo "hostinit: $*" >&2; exit 1; }

mount --make-rprivate / || fail "make-rprivate"
hostname "$H" || fail "hostname"
mount -t tmpfs -o mode=0755,nosuid,nodev th-run /run || fail "tmpfs /run"
# Reach the state directory through a private mount point: it may live under
# /home, /root or /tmp, which the binds below replace with the host's own.
{ mkdir -p /run/.th-state && mount --bind "$S" /run/.th-state; } || fail "bind $S"
S=/run/.th-state
for d in etc usr var opt; do
	mount -t overlay "th-$d" -o "lowerdir=/$d,upperdir=$S/upper/$d,workdir=$S/work/$d" "/$d" || fail "overlay /$d"
done
mount --bind "$S/home" /home || fail "bind /home"
mount --bind "$S/root" /root || fail "bind /root"
mount --bind "$S/tmp" /tmp || fail "bind /tmp"
{ umount -l "$S" && rmdir "$S"; } || fail "umount $S"
mkdir -p /run/sshd /run/lock /run/user && chmod 1777 /run/lock
chmod 1777 /tmp
chmod 700 /root

# The previous boot's processes may still be going away (the kernel empties
# a PID namespace after its init has gone): retry while port 22 is taken.
for _ in $(seq 50); do
	/usr/sbin/sshd -D -e &
	sshd=$!
	sleep 0.05
	kill -0 "$sshd" 2>/dev/null && break
	wait "$sshd"
	echo "hostinit: sshd did not start; trying again"
	sleep 0.1
done
echo "hostinit: $H ready for sshd"
if [ -d /var/lib/th-units/enabled ] && [ -x /usr/bin/systemctl ]; then
	(
		for u in /var/lib/th-units/enabled/*; do
			[ -e "$u" ] || continue
			echo "hostinit: starting enabled ${u##*/}"
			/usr/bin/systemctl start "${u##*/}" || echo "hostinit: ${u##*/} did not start"
		done
	) &
fi
trap 'exit 0' TERM INT
while :; do
	sleep 3600 &
	wait $! || true
done
