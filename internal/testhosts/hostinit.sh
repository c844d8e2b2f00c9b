#!/bin/bash
# PID 1 of one test host (internal/testhosts). Runs inside the host's own
# network namespace and a fresh mount, UTS, IPC and PID namespace.
#   $1 = hostname, $2 = the host's state directory (see host.go for its layout)
# The Go side pre-seeds the overlay upper directories (hostname, hosts,
# resolv.conf, machine-id, host keys, sshd drop-in, sudoers, the accounts in
# passwd/shadow/group) and the private /home and /root; this script only
# mounts and starts sshd.
set -u
H=$1
S=$2

fail() { echo "hostinit: $*" >&2; exit 1; }

mount --make-rprivate / || fail "make-rprivate"
hostname "$H" || fail "hostname"
for d in etc usr var opt; do
	mount -t overlay "th-$d" -o "lowerdir=/$d,upperdir=$S/upper/$d,workdir=$S/work/$d" "/$d" || fail "overlay /$d"
done
mount --bind "$S/home" /home || fail "bind /home"
mount --bind "$S/root" /root || fail "bind /root"
mount -t tmpfs -o mode=0755,nosuid,nodev th-run /run || fail "tmpfs /run"
mkdir -p /run/sshd /run/lock /run/user && chmod 1777 /run/lock

# Last: this also hides $S from inside the host when it lives under /tmp.
mount --bind "$S/tmp" /tmp || fail "bind /tmp"
chmod 1777 /tmp
chmod 700 /root

/usr/sbin/sshd -D -e &
echo "hostinit: $H ready for sshd"
trap 'exit 0' TERM INT
while :; do
	sleep 3600 &
	wait $! || true
done
