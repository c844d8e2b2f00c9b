#!/bin/bash
# install_external_lb.sh: HAProxy in front of a kubespray-built Kubernetes
# cluster, run as root on the externalLB VM by the kubespray management
# driver (mini-VNFM). Idempotent: every run writes the whole configuration
# from the node lists it is given and reloads HAProxy, so adding or removing
# a worker's route is "run it again with the new list".
#
#   -m NODES   control-plane nodes: API frontend *:<api port> -> NODE:6443
#   -w NODES   worker nodes: NodePort frontend *:<range> -> NODE:<same port>
#              NODES is a comma-separated list of NAME=IP (or bare IPs, as
#              Tacker's script takes them; they are named master<N>/worker<N>)
#   -p PORT    API frontend port (default 8383, as Tacker's sample)
#   -a PORT    port of the API servers (default 6443)
#   -n RANGE   NodePort range (default 30000-32767; "none": no NodePort frontend)
#   -c FILE    configuration file (default /etc/haproxy/haproxy.cfg)
#   -d         debug (set -x)
#   -h         help
#
# HTTP proxies for the package installation come from http_proxy/https_proxy
# in the environment. Output ends with "VNFM_RESULT lb=ready api_port=<port>
# masters=<n> workers=<n>".
set -euo pipefail

api_port=8383
apiserver_port=6443
nodeport_range=30000-32767
config=/etc/haproxy/haproxy.cfg
masters=""
workers=""

usage() {
	sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
}

die() {
	echo "install_external_lb.sh: $*" >&2
	exit 1
}

while getopts "m:w:p:a:n:c:dh" opt; do
	case $opt in
	m) masters=$OPTARG ;;
	w) workers=$OPTARG ;;
	p) api_port=$OPTARG ;;
	a) apiserver_port=$OPTARG ;;
	n) nodeport_range=$OPTARG ;;
	c) config=$OPTARG ;;
	d) set -x ;;
	h)
		usage
		exit 0
		;;
	*)
		usage >&2
		exit 2
		;;
	esac
done

[[ $(id -u) -eq 0 ]] || die "must run as root (sudo)"
[[ -n $masters ]] || die "-m: give at least one control-plane node"
for p in "$api_port" "$apiserver_port"; do
	if ! [[ $p =~ ^[0-9]+$ ]] || ((p < 1 || p > 65535)); then
		die "bad port $p"
	fi
done
if [[ $nodeport_range != none ]]; then
	[[ $nodeport_range =~ ^([0-9]+)-([0-9]+)$ ]] || die "-n: bad NodePort range $nodeport_range (want FIRST-LAST or none)"
	((BASH_REMATCH[1] <= BASH_REMATCH[2] && BASH_REMATCH[2] < 65536)) || die "-n: bad NodePort range $nodeport_range"
fi

# server_lines ROLE LIST PORT CHECK: one "server" line per NAME=IP entry.
server_lines() {
	local role=$1 list=$2 port=$3 check=$4 i=0 entry name ip
	local -a entries
	IFS=, read -r -a entries <<<"$list"
	for entry in "${entries[@]}"; do
		[[ -n $entry ]] || continue
		i=$((i + 1))
		if [[ $entry == *=* ]]; then
			name=${entry%%=*}
			ip=${entry#*=}
		else
			name=$role$i
			ip=$entry
		fi
		[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "bad node name '$name'"
		[[ $ip =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || die "bad IPv4 address '$ip' for $name"
		printf '\tserver %s %s%s%s\n' "$name" "$ip" "$port" "$check"
	done
}

count() {
	local -a entries
	local n=0 e
	IFS=, read -r -a entries <<<"$1"
	for e in "${entries[@]}"; do
		[[ -n $e ]] && n=$((n + 1))
	done
	echo "$n"
}

if ! command -v haproxy >/dev/null 2>&1; then
	echo "installing haproxy"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q || die "apt-get update failed"
	apt-get install -y -q haproxy || die "apt-get install haproxy failed"
fi

master_servers=$(server_lines master "$masters" ":$apiserver_port" " check")
worker_servers=$(server_lines worker "$workers" "" "")

tmp=$(mktemp "${config}.XXXXXX")
trap 'rm -f "$tmp"' EXIT
{
	cat <<EOF
# Written by install_external_lb.sh (mini-VNFM kubespray driver); every run
# replaces this file.
global
	log /dev/log local0
	chroot /var/lib/haproxy
	stats socket /run/haproxy/admin.sock mode 660 level admin
	user haproxy
	group haproxy
	daemon

defaults
	log global
	mode tcp
	option tcplog
	timeout connect 5s
	timeout client 1h
	timeout server 1h

frontend kubernetes-apiserver
	bind *:$api_port
	default_backend kubernetes-apiserver

backend kubernetes-apiserver
	balance roundrobin
	option tcp-check
	default-server inter 1s fall 2 rise 2
$master_servers
EOF
	if [[ $nodeport_range != none ]]; then
		cat <<EOF

frontend kubernetes-nodeport
	bind *:$nodeport_range
	default_backend kubernetes-nodeport

# Servers without a port get the port the client connected to.
backend kubernetes-nodeport
	balance roundrobin
$worker_servers
EOF
	fi
} >"$tmp"
haproxy -c -q -f "$tmp" || die "the generated configuration does not validate"
chmod 644 "$tmp"
mv -f "$tmp" "$config"
trap - EXIT

if command -v systemctl >/dev/null 2>&1 && systemctl enable haproxy >/dev/null 2>&1; then
	systemctl reload-or-restart haproxy || die "systemctl reload-or-restart haproxy failed"
else
	service haproxy reload || service haproxy restart || die "cannot (re)start haproxy"
fi

for _ in $(seq 1 50); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$api_port") 2>/dev/null; then
		echo "VNFM_RESULT lb=ready api_port=$api_port masters=$(count "$masters") workers=$(count "$workers")"
		exit 0
	fi
	sleep 0.2
done
die "haproxy does not listen on port $api_port"
