#!/usr/bin/env bash
# Code generated from scripts/install_k8s_cluster.sh by go generate ./mgmtdrivers/kubeadm; DO NOT EDIT.
# install_k8s_cluster.sh — install a kubeadm Kubernetes node (mini-VNFM).
#
# Runs on Ubuntu 22.04/24.04 (amd64) VMs, as root or as a user with
# passwordless sudo. Installs PINNED containerd, kubeadm/kubelet/kubectl (from
# pkgs.k8s.io) and a pinned Calico manifest, then either initialises the first
# control-plane node, joins another control-plane node, or joins a worker.
# On a node where the mini-VNFM Kubernetes stand-in is installed (marker file
# /etc/k8s-standin, see internal/k8sstandin) the package steps are skipped and
# the stand-in's kubeadm/kubectl are used, so the same script runs in tests.
#
# Flags compatible with Tacker's sample script:
#   -m IPS     master mode; comma-separated master node IPs, the first is the
#              main master (kubeadm init); this node is the main master when
#              one of its addresses is the first IP, else it joins as a
#              control-plane node (needs -t -s -k)
#   -w IP      worker mode; this worker's IP (needs -t -s)
#   -i IP      cluster endpoint IP: the VIP (HA) or the master's IP
#   -p CIDR    pod network CIDR (default 192.168.0.0/16)
#   -a CIDR    service CIDR (default 10.96.0.0/12)
#   -t TOKEN   bootstrap token (join)
#   -s HASH    CA certificate hash, "sha256:<hex>" or bare hex (join)
#   -k KEY     certificate key (control-plane join)
#   -d         debug (set -x); -o  also log to /tmp/k8s_install_<ts>.log; -h help
# Our own long options:
#   --api-port PORT        port of the endpoint (default 6443; 16443 when
#                          several masters are given, or ha_flag=True for a worker)
#   --node-name NAME       Kubernetes node name (default: the hostname)
#   --node-ip IP           this node's IP (default: the -m/-w address that is local)
#   --control-plane-join   join as a control-plane node whatever -m says
#   --certificate-key KEY, --token TOKEN, --ca-cert-hash HASH (long forms)
#   --pod-cidr CIDR, --service-cidr CIDR, --endpoint IP (long forms of -p -a -i)
#   --http-proxy URL, --https-proxy URL, --no-proxy LIST (also taken from the
#                          environment variables http_proxy, https_proxy, no_proxy)
#   --token-ttl DURATION   TTL of the join token printed by the main master (default 1h)
#   --skip-cni             do not apply the CNI manifest
#   --no-join-token        the main master makes no join token (the caller
#                          makes its own for each join): no join_token and
#                          no ca_cert_hash result (ca_cert_b64 has the CA)
#   --bootstrap-tokens-stdin
#                          main master: stdin has bootstrap tokens, one a line
#                          ("<id>.<secret> <description>"), that kubeadm init
#                          creates with the cluster (TTL --token-ttl): the
#                          caller's tokens for the joins, there when the init
#                          ends; result bootstrap_tokens=created when it did
#   --prepare              only prepare the node (proxy settings, packages) and
#                          report what is there already; no kubeadm, so it can
#                          run on every node at once before the first master
#                          is up (joins need no -t -s -k then)
#   --cni NAME             the pod network: calico (default) or kuryr
#                          (Kuryr-Kubernetes: pods and Services on Neutron
#                          ports and Octavia load balancers; main master only)
#   --kuryr-config FILE    with --cni kuryr: kuryr-controller's kuryr.conf
#                          (it holds an OpenStack application credential); it
#                          becomes the Secret kube-system/kuryr-config and the
#                          file is removed
#   --etcd-cert-sans LIST  comma-separated extra IPs/names for etcd's server
#                          certificates (the VIP, so that etcd clients can go
#                          through HAProxy's etcd frontend); the main master
#                          then runs kubeadm init with a generated
#                          configuration file (etcd.local.serverCertSANs, kept
#                          in the kubeadm-config ConfigMap for later joins)
# Environment: ha_flag (Tacker), K8S_VERSION, K8S_PKG_VERSION, CONTAINERD_VERSION,
#   CALICO_VERSION, KURYR_CONTROLLER_IMAGE, KURYR_CNI_IMAGE,
#   K8S_STANDIN_MARKER (default /etc/k8s-standin).
#
# Output: human-readable progress, then machine-readable lines the driver parses:
#   VNFM_RESULT key=value
# keys: status (installed|already-installed|prepared|failed), role (main-master|
# control-plane|worker), node_name, node_ip, standin (true|false),
# kubernetes_version, cni; after a kubeadm init or join also kubeadm_started
# (Unix time) and kubeadm_seconds (how long kubeadm itself ran, the rest is
# this script's and the driver's); on the main master also api_endpoint
# (https://host:port), join_token, ca_cert_hash (both not with
# --no-join-token), ca_cert_b64 (base64 of ca.crt on one line) and, for HA,
# certificate_key, and bootstrap_tokens (created: kubeadm init made the
# --bootstrap-tokens-stdin tokens); after a worker's join node_registered (true|false: its
# Node object appeared within 10 s, asked with the kubelet's credentials);
# with --prepare, kubelet_conf
# (present|absent: the node holds a kubelet.conf, it joined or began to) and
# control_plane (present|absent: static pod manifests of a control plane);
# on failure also error. Exit status is 0 only on success.
set -euo pipefail

# Pinned versions.
K8S_VERSION="${K8S_VERSION:-v1.31.4}"
K8S_MINOR="${K8S_VERSION%.*}"
K8S_PKG_VERSION="${K8S_PKG_VERSION:-${K8S_VERSION#v}-1.1}"
CONTAINERD_VERSION="${CONTAINERD_VERSION:-1.7.24-1}"
CALICO_VERSION="${CALICO_VERSION:-v3.28.2}"
CALICO_MANIFEST="https://raw.githubusercontent.com/projectcalico/calico/${CALICO_VERSION}/manifests/calico.yaml"
# Kuryr-Kubernetes: the manifests are this script's own (kuryr_manifests),
# the images pinned here: the pre-built kuryr/controller and kuryr/cni that
# Kuryr's installation guide points to on Docker Hub. Point them at the
# images you build or mirror (ideally by digest) with the variables.
KURYR_VERSION="${KURYR_VERSION:-2024.1}"
KURYR_CONTROLLER_IMAGE="${KURYR_CONTROLLER_IMAGE:-docker.io/kuryr/controller:${KURYR_VERSION}}"
KURYR_CNI_IMAGE="${KURYR_CNI_IMAGE:-docker.io/kuryr/cni:${KURYR_VERSION}}"
KURYR_CONF_DIR="${K8S_INSTALL_ROOT:-}/etc/kuryr"
MARKER="${K8S_STANDIN_MARKER:-/etc/k8s-standin}"
# Test hooks (bats): a root prefix for the state checks and another os-release.
ETC_K8S="${K8S_INSTALL_ROOT:-}/etc/kubernetes"
OS_RELEASE="${K8S_INSTALL_OS_RELEASE:-/etc/os-release}"

PROG=install_k8s_cluster.sh
MASTERS="" WORKER="" ENDPOINT="" POD_CIDR="192.168.0.0/16" SVC_CIDR="10.96.0.0/12"
TOKEN="" CA_HASH="" CERT_KEY="" API_PORT="" NODE_NAME="" NODE_IP="" CP_JOIN=0
TOKEN_TTL="1h" SKIP_CNI=0 NO_JOIN_TOKEN=0 LOGFILE="" STANDIN=0 ROLE="" ETCD_SANS="" CNI=calico KURYR_CONFIG=""
PREPARE=0 KUBEADM_STARTED="" KUBEADM_SECONDS="" TOKENS_STDIN=0
MASTER_IPS=() BOOTSTRAP_TOKENS=()
HTTP_PROXY_V="${http_proxy:-${HTTP_PROXY:-}}"
HTTPS_PROXY_V="${https_proxy:-${HTTPS_PROXY:-}}"
NO_PROXY_V="${no_proxy:-${NO_PROXY:-}}"

result() { printf 'VNFM_RESULT %s=%s\n' "$1" "$2"; }
log() { printf '[%s] %s\n' "$PROG" "$*"; }
fail() {
	printf '%s: error: %s\n' "$PROG" "$*" >&2
	result status failed
	result error "$(printf '%s' "$*" | tr '\n' ' ')"
	echo "Install Failed!"
	exit 1
}
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	else
		sudo -n -E "$@"
	fi
}

need_arg() { [[ $# -ge 2 && -n $2 ]] || fail "option $1 needs a value"; }

parse_args() {
	while [[ $# -gt 0 ]]; do
		case $1 in
		-m) need_arg "$@"; MASTERS=$2; shift 2 ;;
		-w) need_arg "$@"; WORKER=$2; shift 2 ;;
		-i | --endpoint) need_arg "$@"; ENDPOINT=$2; shift 2 ;;
		-p | --pod-cidr) need_arg "$@"; POD_CIDR=$2; shift 2 ;;
		-a | --service-cidr) need_arg "$@"; SVC_CIDR=$2; shift 2 ;;
		-t | --token) need_arg "$@"; TOKEN=$2; shift 2 ;;
		-s | --ca-cert-hash) need_arg "$@"; CA_HASH=$2; shift 2 ;;
		-k | --certificate-key) need_arg "$@"; CERT_KEY=$2; shift 2 ;;
		-d) set -x; shift ;;
		-o) LOGFILE="/tmp/k8s_install_$(date +%Y%m%d%H%M%S).log"; shift ;;
		-h | --help) usage; exit 0 ;;
		--api-port) need_arg "$@"; API_PORT=$2; shift 2 ;;
		--node-name) need_arg "$@"; NODE_NAME=$2; shift 2 ;;
		--node-ip) need_arg "$@"; NODE_IP=$2; shift 2 ;;
		--control-plane-join) CP_JOIN=1; shift ;;
		--http-proxy) need_arg "$@"; HTTP_PROXY_V=$2; shift 2 ;;
		--https-proxy) need_arg "$@"; HTTPS_PROXY_V=$2; shift 2 ;;
		--no-proxy) need_arg "$@"; NO_PROXY_V=$2; shift 2 ;;
		--token-ttl) need_arg "$@"; TOKEN_TTL=$2; shift 2 ;;
		--skip-cni) SKIP_CNI=1; shift ;;
		--no-join-token) NO_JOIN_TOKEN=1; shift ;;
		--prepare) PREPARE=1; shift ;;
		--bootstrap-tokens-stdin) TOKENS_STDIN=1; shift ;;
		--etcd-cert-sans) need_arg "$@"; ETCD_SANS=$2; shift 2 ;;
		--cni) need_arg "$@"; CNI=$2; shift 2 ;;
		--kuryr-config) need_arg "$@"; KURYR_CONFIG=$2; shift 2 ;;
		*) fail "unknown option: $1 (see -h)" ;;
		esac
	done
}

valid_ip() {
	local ip=$1 IFS=. o
	[[ $ip =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || return 1
	for o in $ip; do ((o <= 255)) || return 1; done
}
valid_cidr() { [[ $1 == */* ]] && valid_ip "${1%/*}" && [[ ${1#*/} =~ ^[0-9]{1,2}$ ]] && ((${1#*/} <= 32)); }

validate() {
	[[ -n $MASTERS || -n $WORKER ]] || fail "one of -m (master) or -w (worker) is required"
	[[ -z $MASTERS || -z $WORKER ]] || fail "-m and -w are mutually exclusive"
	local ip
	if [[ -n $MASTERS ]]; then
		IFS=, read -r -a MASTER_IPS <<<"$MASTERS"
		for ip in "${MASTER_IPS[@]}"; do valid_ip "$ip" || fail "-m: invalid IP address '$ip'"; done
	fi
	[[ -z $WORKER ]] || valid_ip "$WORKER" || fail "-w: invalid IP address '$WORKER'"
	[[ -z $NODE_IP ]] || valid_ip "$NODE_IP" || fail "--node-ip: invalid IP address '$NODE_IP'"
	valid_cidr "$POD_CIDR" || fail "-p: invalid CIDR '$POD_CIDR'"
	valid_cidr "$SVC_CIDR" || fail "-a: invalid CIDR '$SVC_CIDR'"
	if [[ -z $ENDPOINT ]]; then
		if [[ -n $MASTERS ]]; then ENDPOINT=${MASTER_IPS[0]}; else fail "-i (cluster endpoint IP) is required for a worker"; fi
	fi
	valid_ip "$ENDPOINT" || fail "-i: invalid IP address '$ENDPOINT'"
	if [[ -z $API_PORT ]]; then
		API_PORT=6443
		if [[ -n $MASTERS && ${#MASTER_IPS[@]} -gt 1 ]]; then API_PORT=16443; fi
		if [[ -n $WORKER && ${ha_flag:-False} =~ ^(True|true|1|yes)$ ]]; then API_PORT=16443; fi
	fi
	if ! [[ $API_PORT =~ ^[0-9]+$ ]] || ((API_PORT < 1 || API_PORT > 65535)); then
		fail "--api-port: invalid port '$API_PORT'"
	fi
	[[ -z $TOKEN || $TOKEN =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] || fail "-t: invalid bootstrap token (want [a-z0-9]{6}.[a-z0-9]{16})"
	if [[ -n $CA_HASH ]]; then
		[[ $CA_HASH == sha256:* ]] || CA_HASH="sha256:$CA_HASH"
		[[ $CA_HASH =~ ^sha256:[0-9a-fA-F]{64}$ ]] || fail "-s: invalid CA certificate hash"
	fi
	[[ -z $CERT_KEY || $CERT_KEY =~ ^[0-9a-fA-F]{64}$ ]] || fail "-k: invalid certificate key (want 64 hex characters)"
	case $CNI in
	calico) [[ -z $KURYR_CONFIG ]] || fail "--kuryr-config is used only with --cni kuryr" ;;
	kuryr)
		if [[ -n $MASTERS && -z $KURYR_CONFIG ]]; then
			fail "--cni kuryr needs --kuryr-config (kuryr-controller's kuryr.conf) on a master"
		fi
		[[ -z $KURYR_CONFIG || -r $KURYR_CONFIG ]] || as_root test -r "$KURYR_CONFIG" || fail "--kuryr-config: cannot read $KURYR_CONFIG"
		;;
	*) fail "--cni: '$CNI' is not a supported pod network (calico or kuryr)" ;;
	esac
	local san sans
	IFS=, read -r -a sans <<<"$ETCD_SANS"
	for san in "${sans[@]}"; do
		valid_ip "$san" || [[ $san =~ ^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$ ]] || fail "--etcd-cert-sans: '$san' is neither an IPv4 address nor a DNS name"
	done
}

local_ips() { hostname -I 2>/dev/null | tr ' ' '\n' | grep -v '^$' || true; }

is_local_ip() { local_ips | grep -qxF "$1"; }

decide_role() {
	if [[ -n $WORKER ]]; then
		ROLE=worker
		NODE_IP=${NODE_IP:-$WORKER}
	elif [[ $CP_JOIN -eq 0 ]] && { [[ $NODE_IP == "${MASTER_IPS[0]}" ]] || { [[ -z $NODE_IP ]] && is_local_ip "${MASTER_IPS[0]}"; }; }; then
		ROLE=main-master
		NODE_IP=${NODE_IP:-${MASTER_IPS[0]}}
	else
		ROLE=control-plane
		if [[ -z $NODE_IP ]]; then
			local ip
			for ip in "${MASTER_IPS[@]:1}"; do
				if is_local_ip "$ip"; then NODE_IP=$ip; fi
			done
		fi
		[[ -n $NODE_IP ]] || fail "none of the master IPs ($MASTERS) is an address of this node; use --node-ip"
	fi
	if [[ $ROLE != main-master ]]; then
		[[ -n $TOKEN ]] || fail "-t (token) is required to join a $ROLE node"
		[[ -n $CA_HASH ]] || fail "-s (CA certificate hash) is required to join a $ROLE node"
	fi
	if [[ $ROLE == control-plane ]]; then
		[[ -n $CERT_KEY ]] || fail "-k (certificate key) is required to join a control-plane node"
	fi
	NODE_NAME=${NODE_NAME:-$(hostname | tr '[:upper:]' '[:lower:]')}
}

setup_proxy() {
	[[ -n $HTTP_PROXY_V || -n $HTTPS_PROXY_V ]] || return 0
	local np="${NO_PROXY_V:+$NO_PROXY_V,}127.0.0.1,localhost,$POD_CIDR,$SVC_CIDR,$ENDPOINT,$NODE_IP"
	export http_proxy=$HTTP_PROXY_V https_proxy=$HTTPS_PROXY_V no_proxy=$np
	export HTTP_PROXY=$HTTP_PROXY_V HTTPS_PROXY=$HTTPS_PROXY_V NO_PROXY=$np
	[[ $STANDIN -eq 1 ]] && return 0
	log "configuring the proxy for apt and containerd"
	printf 'Acquire::http::Proxy "%s";\nAcquire::https::Proxy "%s";\n' "$HTTP_PROXY_V" "${HTTPS_PROXY_V:-$HTTP_PROXY_V}" |
		as_root tee /etc/apt/apt.conf.d/90mini-vnfm-proxy >/dev/null
	as_root mkdir -p /etc/systemd/system/containerd.service.d
	printf '[Service]\nEnvironment="HTTP_PROXY=%s"\nEnvironment="HTTPS_PROXY=%s"\nEnvironment="NO_PROXY=%s"\n' \
		"$HTTP_PROXY_V" "${HTTPS_PROXY_V:-$HTTP_PROXY_V}" "$np" |
		as_root tee /etc/systemd/system/containerd.service.d/http-proxy.conf >/dev/null
}

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }

install_packages() {
	if [[ $STANDIN -eq 1 ]]; then
		log "k8s stand-in found ($MARKER): skipping package installation"
		if ! command -v kubeadm >/dev/null || ! command -v kubectl >/dev/null; then
			fail "the stand-in marker $MARKER exists but kubeadm/kubectl are missing"
		fi
		return 0
	fi
	[[ -r $OS_RELEASE ]] || fail "cannot read $OS_RELEASE"
	# shellcheck disable=SC1090
	. "$OS_RELEASE"
	[[ ${ID:-} == ubuntu && ${VERSION_ID:-} =~ ^(22\.04|24\.04)$ ]] || fail "unsupported OS ${PRETTY_NAME:-unknown}: Ubuntu 22.04 or 24.04 is required"
	local have
	have=$(pkg_version kubeadm)
	if [[ -n $have && $have != "$K8S_PKG_VERSION" ]]; then
		fail "kubeadm $have is installed but $K8S_PKG_VERSION is pinned; refusing to change a node's Kubernetes version"
	fi
	log "disabling swap and loading kernel modules"
	as_root swapoff -a
	as_root sed -i.bak -E '/\sswap\s/s/^([^#])/#\1/' /etc/fstab
	printf 'overlay\nbr_netfilter\n' | as_root tee /etc/modules-load.d/k8s.conf >/dev/null
	as_root modprobe overlay
	as_root modprobe br_netfilter
	printf 'net.bridge.bridge-nf-call-iptables = 1\nnet.bridge.bridge-nf-call-ip6tables = 1\nnet.ipv4.ip_forward = 1\n' |
		as_root tee /etc/sysctl.d/99-kubernetes.conf >/dev/null
	as_root sysctl --system >/dev/null
	export DEBIAN_FRONTEND=noninteractive
	if [[ $(pkg_version containerd.io) != "$CONTAINERD_VERSION" ]]; then
		log "installing containerd.io $CONTAINERD_VERSION"
		as_root apt-get update -q
		as_root apt-get install -y -q ca-certificates curl gpg
		as_root install -m 0755 -d /etc/apt/keyrings
		curl -fsSL https://download.docker.com/linux/ubuntu/gpg | as_root gpg --batch --yes --dearmor -o /etc/apt/keyrings/docker.gpg
		echo "deb [arch=amd64 signed-by=/etc/apt/keyrings/docker.gpg] https://download.docker.com/linux/ubuntu ${VERSION_CODENAME} stable" |
			as_root tee /etc/apt/sources.list.d/docker.list >/dev/null
		as_root apt-get update -q
		as_root apt-get install -y -q --allow-downgrades "containerd.io=$CONTAINERD_VERSION"
		as_root apt-mark hold containerd.io
		containerd config default | sed 's/SystemdCgroup = false/SystemdCgroup = true/' | as_root tee /etc/containerd/config.toml >/dev/null
		as_root systemctl daemon-reload
		as_root systemctl restart containerd
		as_root systemctl enable containerd
	else
		log "containerd.io $CONTAINERD_VERSION already installed"
	fi
	if [[ -z $have ]]; then
		log "installing kubelet, kubeadm, kubectl $K8S_PKG_VERSION from pkgs.k8s.io"
		curl -fsSL "https://pkgs.k8s.io/core:/stable:/${K8S_MINOR}/deb/Release.key" |
			as_root gpg --batch --yes --dearmor -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg
		echo "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/${K8S_MINOR}/deb/ /" |
			as_root tee /etc/apt/sources.list.d/kubernetes.list >/dev/null
		as_root apt-get update -q
		as_root apt-get install -y -q "kubelet=$K8S_PKG_VERSION" "kubeadm=$K8S_PKG_VERSION" "kubectl=$K8S_PKG_VERSION"
		as_root apt-mark hold kubelet kubeadm kubectl
	else
		log "kubeadm $have already installed"
	fi
	as_root systemctl enable kubelet
}

kubectl_admin() { as_root kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }

# kubeadm_began and kubeadm_ended record when kubeadm init/join started and
# how long it ran (KUBEADM_STARTED, KUBEADM_SECONDS): what of a node's
# install is kubeadm's own time.
kubeadm_began() { KUBEADM_STARTED=$(date +%s.%N); }
kubeadm_ended() {
	KUBEADM_SECONDS=$(awk -v a="$KUBEADM_STARTED" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
}

# copy_kubeconfig gives the invoking user (the driver's SSH user) kubectl access.
copy_kubeconfig() {
	local user=${SUDO_USER:-$(id -un)} home
	home=$(getent passwd "$user" | cut -d: -f6)
	[[ -n $home ]] || return 0
	as_root mkdir -p "$home/.kube"
	as_root cp "$ETC_K8S/admin.conf" "$home/.kube/config"
	as_root chown "$(id -u "$user"):$(id -g "$user")" "$home/.kube" "$home/.kube/config"
	as_root chmod 600 "$home/.kube/config"
}

apply_cni() {
	[[ $SKIP_CNI -eq 1 ]] && return 0
	if [[ $CNI == kuryr ]]; then
		apply_kuryr
		return 0
	fi
	[[ $STANDIN -eq 1 ]] && return 0
	local i
	for i in $(seq 1 30); do
		if kubectl_admin apply -f "$CALICO_MANIFEST"; then return 0; fi
		log "CNI apply failed (attempt $i), retrying"
		sleep 10
	done
	fail "could not apply the Calico manifest $CALICO_MANIFEST"
}

# kuryr_manifests prints Kuryr-Kubernetes for this cluster: its CRDs, the
# controller's and the CNI daemon's service accounts and RBAC, the CNI
# configuration, the controller Deployment (on a control-plane node, its
# configuration from the Secret kuryr-config) and the CNI DaemonSet, with the
# pinned images. $1: the API server URL.
kuryr_manifests() {
	local api=$1 crd
	for crd in kuryrloadbalancers:KuryrLoadBalancer kuryrports:KuryrPort kuryrnetworks:KuryrNetwork kuryrnetworkpolicies:KuryrNetworkPolicy; do
		cat <<-EOC
			apiVersion: apiextensions.k8s.io/v1
			kind: CustomResourceDefinition
			metadata:
			  name: ${crd%%:*}.openstack.org
			spec:
			  group: openstack.org
			  scope: Namespaced
			  names:
			    plural: ${crd%%:*}
			    kind: ${crd#*:}
			  versions:
			  - name: v1
			    served: true
			    storage: true
			    subresources: {status: {}}
			    schema:
			      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
			---
		EOC
	done
	cat <<-EOC
		apiVersion: v1
		kind: ServiceAccount
		metadata: {name: kuryr-controller, namespace: kube-system}
		---
		apiVersion: v1
		kind: ServiceAccount
		metadata: {name: kuryr-cni, namespace: kube-system}
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRole
		metadata: {name: kuryr-controller}
		rules:
		- apiGroups: [""]
		  resources: [endpoints, pods, services, services/status, namespaces, nodes]
		  verbs: [get, list, watch, update, patch]
		- apiGroups: [""]
		  resources: [events]
		  verbs: [create, patch]
		- apiGroups: [openstack.org]
		  resources: ["*"]
		  verbs: ["*"]
		- apiGroups: [networking.k8s.io]
		  resources: [networkpolicies]
		  verbs: [get, list, watch, update, patch]
		- apiGroups: [discovery.k8s.io]
		  resources: [endpointslices]
		  verbs: [get, list, watch]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRole
		metadata: {name: kuryr-cni}
		rules:
		- apiGroups: [""]
		  resources: [pods, nodes]
		  verbs: [get, list, watch]
		- apiGroups: [openstack.org]
		  resources: [kuryrports]
		  verbs: [get, list, watch]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRoleBinding
		metadata: {name: kuryr-controller}
		roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kuryr-controller}
		subjects: [{kind: ServiceAccount, name: kuryr-controller, namespace: kube-system}]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRoleBinding
		metadata: {name: kuryr-cni}
		roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kuryr-cni}
		subjects: [{kind: ServiceAccount, name: kuryr-cni, namespace: kube-system}]
		---
		apiVersion: v1
		kind: ConfigMap
		metadata: {name: kuryr-cni-config, namespace: kube-system}
		data:
		  kuryr-cni.conf: |
		    [DEFAULT]
		    use_stderr = true
		    [kubernetes]
		    api_root = $api
		    token_file = /var/run/secrets/kubernetes.io/serviceaccount/token
		    ssl_ca_crt_file = /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
		    ssl_verify_server_crt = true
		---
		apiVersion: apps/v1
		kind: Deployment
		metadata: {name: kuryr-controller, namespace: kube-system, labels: {app: kuryr-controller}}
		spec:
		  replicas: 1
		  strategy: {type: Recreate}
		  selector: {matchLabels: {app: kuryr-controller}}
		  template:
		    metadata: {labels: {app: kuryr-controller}}
		    spec:
		      serviceAccountName: kuryr-controller
		      hostNetwork: true
		      nodeSelector: {node-role.kubernetes.io/control-plane: ""}
		      tolerations: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}, {key: node.kubernetes.io/not-ready, effect: NoSchedule}]
		      containers:
		      - name: controller
		        image: $KURYR_CONTROLLER_IMAGE
		        args: [--config-file, /etc/kuryr/kuryr.conf]
		        readinessProbe: {httpGet: {path: /ready, port: 8082, scheme: HTTP}, timeoutSeconds: 5}
		        livenessProbe: {httpGet: {path: /alive, port: 8082}, initialDelaySeconds: 15}
		        volumeMounts: [{name: config, mountPath: /etc/kuryr, readOnly: true}]
		      volumes: [{name: config, secret: {secretName: kuryr-config, defaultMode: 0400}}]
		---
		apiVersion: apps/v1
		kind: DaemonSet
		metadata: {name: kuryr-cni, namespace: kube-system, labels: {app: kuryr-cni}}
		spec:
		  selector: {matchLabels: {app: kuryr-cni}}
		  template:
		    metadata: {labels: {app: kuryr-cni}}
		    spec:
		      serviceAccountName: kuryr-cni
		      hostNetwork: true
		      tolerations: [{operator: Exists}]
		      containers:
		      - name: kuryr-cni
		        image: $KURYR_CNI_IMAGE
		        args: [--config-file, /etc/kuryr/kuryr-cni.conf]
		        securityContext: {privileged: true}
		        env: [{name: KURYR_CNI_POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
		        readinessProbe: {httpGet: {path: /ready, port: 8090}, timeoutSeconds: 5}
		        volumeMounts:
		        - {name: bin, mountPath: /opt/cni/bin}
		        - {name: net-conf, mountPath: /etc/cni/net.d}
		        - {name: config, mountPath: /etc/kuryr, readOnly: true}
		        - {name: proc, mountPath: /host_proc}
		        - {name: openvswitch, mountPath: /var/run/openvswitch}
		      volumes:
		      - {name: bin, hostPath: {path: /opt/cni/bin}}
		      - {name: net-conf, hostPath: {path: /etc/cni/net.d}}
		      - {name: config, configMap: {name: kuryr-cni-config}}
		      - {name: proc, hostPath: {path: /proc}}
		      - {name: openvswitch, hostPath: {path: /var/run/openvswitch}}
	EOC
}

# apply_kuryr installs Kuryr-Kubernetes: the configuration (with its
# OpenStack credential) as the Secret kube-system/kuryr-config, built here
# so the credential is neither an argument nor in a log, then the manifests.
# The uploaded file is removed. On the stand-in (no containers) the
# controller runs as a static pod of the stand-in's kuryr-controller, which
# reads the configuration from /etc/kuryr/kuryr.conf (root's, 0600).
apply_kuryr() {
	[[ -n $KURYR_CONFIG ]] || fail "--cni kuryr needs --kuryr-config on the main master"
	local b64 i
	b64=$(as_root base64 -w0 "$KURYR_CONFIG") || fail "cannot read $KURYR_CONFIG"
	log "installing Kuryr-Kubernetes (controller $KURYR_CONTROLLER_IMAGE, CNI $KURYR_CNI_IMAGE)"
	for i in $(seq 1 30); do
		if printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: kuryr-config, namespace: kube-system}\ntype: Opaque\ndata:\n  kuryr.conf: %s\n' "$b64" |
			kubectl_admin apply -f - >/dev/null; then
			break
		fi
		((i < 30)) || fail "could not create the Secret kube-system/kuryr-config"
		log "creating the Kuryr configuration Secret failed (attempt $i), retrying"
		sleep 5
	done
	if [[ $STANDIN -eq 1 ]]; then
		as_root install -D -m 0600 "$KURYR_CONFIG" "$KURYR_CONF_DIR/kuryr.conf"
		printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: kuryr-controller\n  namespace: kube-system\nspec:\n  hostNetwork: true\n  containers:\n  - name: controller\n    image: %s\n    command: [kuryr-controller, --config-file, /etc/kuryr/kuryr.conf]\n' "$KURYR_CONTROLLER_IMAGE" |
			as_root tee "$ETC_K8S/manifests/kuryr-controller.yaml" >/dev/null
	fi
	as_root rm -f "$KURYR_CONFIG"
	for i in $(seq 1 30); do
		if kuryr_manifests "https://$ENDPOINT:$API_PORT" | kubectl_admin apply -f -; then return 0; fi
		log "Kuryr manifests apply failed (attempt $i), retrying"
		sleep 10
	done
	fail "could not apply the Kuryr-Kubernetes manifests"
}

wait_node() {
	local i
	for i in $(seq 1 60); do
		if kubectl_admin get node "$NODE_NAME" -o name >/dev/null 2>&1; then return 0; fi
		log "waiting for node $NODE_NAME to register ($i)"
		sleep 2
	done
	fail "node $NODE_NAME did not appear in the cluster"
}

# read_tokens reads --bootstrap-tokens-stdin's lines: "<token> <description>".
read_tokens() {
	local tok desc
	while IFS=' ' read -r tok desc; do
		[[ -n $tok ]] || continue
		[[ $tok =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] || fail "--bootstrap-tokens-stdin: a line is not '<token> <description>' with a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})"
		BOOTSTRAP_TOKENS+=("$tok" "$desc")
	done
}

# kubeadm_config prints the kubeadm init configuration equivalent to the
# flags main_master passes otherwise, plus what no flag sets: etcd's extra
# certificate SANs and the caller's bootstrap tokens. v1beta4 from
# Kubernetes 1.31 on, else v1beta3 (the fields used are the same in both).
kubeadm_config() {
	local api=kubeadm.k8s.io/v1beta4 minor=${K8S_MINOR#v1.} san sans i
	[[ $minor =~ ^[0-9]+$ ]] && ((minor < 31)) && api=kubeadm.k8s.io/v1beta3
	cat <<-EOC
		apiVersion: $api
		kind: InitConfiguration
		localAPIEndpoint:
		  advertiseAddress: "$NODE_IP"
		  bindPort: $1
		nodeRegistration:
		  name: "$NODE_NAME"
	EOC
	if [[ ${#BOOTSTRAP_TOKENS[@]} -gt 0 ]]; then
		echo "bootstrapTokens:"
		for ((i = 0; i < ${#BOOTSTRAP_TOKENS[@]}; i += 2)); do
			# YAML single quotes: a quote is doubled.
			printf -- "- token: '%s'\n  description: '%s'\n  ttl: '%s'\n" "${BOOTSTRAP_TOKENS[i]}" "${BOOTSTRAP_TOKENS[i + 1]//\'/\'\'}" "$TOKEN_TTL"
			printf -- '  usages: [signing, authentication]\n  groups: [system:bootstrappers:kubeadm:default-node-token]\n'
		done
	fi
	cat <<-EOC
		---
		apiVersion: $api
		kind: ClusterConfiguration
		controlPlaneEndpoint: "$ENDPOINT:$API_PORT"
		networking:
		  podSubnet: "$POD_CIDR"
		  serviceSubnet: "$SVC_CIDR"
	EOC
	[[ -n $ETCD_SANS ]] || return 0
	printf 'etcd:\n  local:\n    serverCertSANs:\n'
	IFS=, read -r -a sans <<<"$ETCD_SANS"
	for san in "${sans[@]}"; do printf '    - "%s"\n' "$san"; done
}

main_master() {
	local endpoint="$ENDPOINT:$API_PORT" status=installed out cfgdir="" tokens_made=0
	if [[ -f $ETC_K8S/admin.conf ]] && kubectl_admin get node "$NODE_NAME" -o name >/dev/null 2>&1; then
		log "the control plane is already initialised on this node; not running kubeadm init again"
		status=already-installed
	else
		if [[ -e $ETC_K8S/manifests/kube-apiserver.yaml || -e $ETC_K8S/admin.conf ]]; then
			log "a previous kubeadm init did not finish: resetting this node first"
			as_root kubeadm reset -f
		fi
		# A single master serves the endpoint port itself; with several masters
		# the endpoint is HAProxy on the VIP and the API servers keep 6443.
		local bind=6443 args
		if [[ ${#MASTER_IPS[@]} -eq 1 ]]; then bind=$API_PORT; fi
		if [[ -n $ETCD_SANS || ${#BOOTSTRAP_TOKENS[@]} -gt 0 ]]; then
			# kubeadm refuses most flags next to --config: all goes into the file
			# (mktemp -d: only root reads it; it holds the caller's tokens).
			cfgdir=$(mktemp -d)
			kubeadm_config "$bind" >"$cfgdir/kubeadm-init.yaml"
			args=(init --config "$cfgdir/kubeadm-init.yaml")
		else
			args=(init --control-plane-endpoint "$endpoint" --apiserver-advertise-address "$NODE_IP"
				--pod-network-cidr "$POD_CIDR" --service-cidr "$SVC_CIDR" --node-name "$NODE_NAME")
			if [[ ${#MASTER_IPS[@]} -eq 1 ]]; then args+=(--apiserver-bind-port "$API_PORT"); fi
		fi
		if [[ ${#MASTER_IPS[@]} -gt 1 ]]; then args+=(--upload-certs); fi
		# Kuryr serves Services with Octavia load balancers: no kube-proxy.
		if [[ $CNI == kuryr ]]; then args+=(--skip-phases=addon/kube-proxy); fi
		log "kubeadm ${args[*]}"
		kubeadm_began
		out=$(as_root kubeadm "${args[@]}" 2>&1) || { [[ -z $cfgdir ]] || rm -rf "$cfgdir"; fail "kubeadm init failed: $(tail -n 5 <<<"$out")"; }
		kubeadm_ended
		[[ ${#BOOTSTRAP_TOKENS[@]} -eq 0 ]] || tokens_made=1
		log "kubeadm init succeeded; the API server answers"
		[[ -z $cfgdir ]] || rm -rf "$cfgdir"
		printf '%s\n' "$out"
	fi
	copy_kubeconfig
	apply_cni
	# After an init that just succeeded the Node exists (kubeadm's
	# mark-control-plane phase patched it).
	[[ $status == installed ]] || wait_node
	local join token="" hash="" key=""
	if [[ $NO_JOIN_TOKEN -eq 0 ]]; then
		join=$(as_root kubeadm token create --ttl "$TOKEN_TTL" --print-join-command) || fail "kubeadm token create failed"
		token=$(grep -oE -- '--token [^ ]+' <<<"$join" | cut -d' ' -f2)
		hash=$(grep -oE -- '--discovery-token-ca-cert-hash [^ ]+' <<<"$join" | cut -d' ' -f2)
		[[ -n $token && -n $hash ]] || fail "cannot parse the join command: $join"
	fi
	if [[ ${#MASTER_IPS[@]} -gt 1 ]]; then
		# kubeadm init --upload-certs printed the key of the certificates it
		# uploaded; a master initialised before uploads them again.
		key=$(awk '/Using certificate key:/ { getline; print; exit }' <<<"${out:-}")
		if [[ ! $key =~ ^[0-9a-f]{64}$ ]]; then
			key=$(as_root kubeadm init phase upload-certs --upload-certs | tail -n 1) || fail "kubeadm init phase upload-certs failed"
		fi
		[[ $key =~ ^[0-9a-f]{64}$ ]] || fail "unexpected certificate key '$key'"
	fi
	results "$status"
	result api_endpoint "https://$endpoint"
	[[ -z $token ]] || result join_token "$token"
	[[ -z $hash ]] || result ca_cert_hash "$hash"
	[[ -z $key ]] || result certificate_key "$key"
	[[ $tokens_made -eq 0 ]] || result bootstrap_tokens created
	result ca_cert_b64 "$(as_root base64 -w0 "$ETC_K8S/pki/ca.crt")"
}

join_node() {
	local endpoint="$ENDPOINT:$API_PORT" out
	if [[ -f $ETC_K8S/kubelet.conf ]]; then
		log "this node has already joined the cluster; not running kubeadm join again"
		results already-installed
		return 0
	fi
	if [[ -e $ETC_K8S/pki/ca.crt || -e $ETC_K8S/manifests/kube-apiserver.yaml || -e $ETC_K8S/manifests/etcd.yaml ]]; then
		log "a previous join did not finish: resetting this node first"
		as_root kubeadm reset -f
	fi
	local args=(join "$endpoint" --token "$TOKEN" --discovery-token-ca-cert-hash "$CA_HASH" --node-name "$NODE_NAME")
	if [[ $ROLE == control-plane ]]; then
		args+=(--control-plane --certificate-key "$CERT_KEY" --apiserver-advertise-address "$NODE_IP")
	fi
	log "kubeadm join $endpoint --node-name $NODE_NAME${CERT_KEY:+ --control-plane}"
	kubeadm_began
	watch_bootstrap &
	local watcher=$!
	out=$(as_root kubeadm "${args[@]}" 2>&1) || {
		kill "$watcher" 2>/dev/null || true
		fail "kubeadm join failed: $(tail -n 5 <<<"$out")"
	}
	kubeadm_ended
	kill "$watcher" 2>/dev/null || true
	wait "$watcher" 2>/dev/null || true
	printf '%s\n' "$out"
	grep -q "This node has joined the cluster" <<<"$out" || fail "kubeadm join did not report success"
	[[ $ROLE != control-plane ]] || copy_kubeconfig
	results installed
	if [[ $ROLE == worker ]]; then
		result node_registered "$(node_registered && echo true || echo false)"
	fi
}

# watch_bootstrap says when the kubelet has done its TLS bootstrap (kubeadm
# join waits for the kubelet.conf it writes): from then on the join needs
# neither its bootstrap token nor the uploaded control-plane certificates
# (downloaded before), and the caller may delete them while kubeadm goes on.
watch_bootstrap() {
	local i
	for i in $(seq 1 6000); do
		if [[ -f $ETC_K8S/kubelet.conf ]]; then
			log "kubelet bootstrapped: the join token is no longer needed"
			return 0
		fi
		sleep 0.2
	done
}

# node_registered waits (at most 10 s) until this node's Node object exists,
# asking with the kubelet's own credentials (the Node authorizer lets a
# kubelet read its own Node): the caller then needs no round trip to a
# master to see the join through.
node_registered() {
	local i
	for i in $(seq 1 40); do
		if as_root kubectl --kubeconfig "$ETC_K8S/kubelet.conf" get node "$NODE_NAME" -o name >/dev/null 2>&1; then return 0; fi
		sleep 0.25
	done
	return 1
}

results() {
	echo "Install Success!"
	result status "$1"
	result role "$ROLE"
	result node_name "$NODE_NAME"
	result node_ip "$NODE_IP"
	result standin "$([[ $STANDIN -eq 1 ]] && echo true || echo false)"
	result cni "$CNI"
	result kubernetes_version "$K8S_VERSION"
	if [[ -n $KUBEADM_SECONDS ]]; then
		result kubeadm_started "$KUBEADM_STARTED"
		result kubeadm_seconds "$KUBEADM_SECONDS"
	fi
}

# prepare is --prepare: what a node needs before kubeadm (proxy settings,
# packages), and what it holds already.
prepare() {
	log "preparing node ${NODE_NAME:-$(hostname)}: proxy settings and packages, no kubeadm"
	setup_proxy
	install_packages
	echo "Prepare Success!"
	result status prepared
	result standin "$([[ $STANDIN -eq 1 ]] && echo true || echo false)"
	result kubelet_conf "$([[ -f $ETC_K8S/kubelet.conf ]] && echo present || echo absent)"
	result control_plane "$([[ -e $ETC_K8S/manifests/kube-apiserver.yaml || -e $ETC_K8S/manifests/etcd.yaml ]] && echo present || echo absent)"
}

main() {
	parse_args "$@"
	if [[ -n $LOGFILE ]]; then
		exec > >(tee -a "$LOGFILE") 2>&1
	fi
	validate
	STANDIN=0
	[[ -f $MARKER ]] && STANDIN=1
	if [[ $PREPARE -eq 1 ]]; then
		prepare
		return 0
	fi
	[[ $TOKENS_STDIN -eq 0 ]] || read_tokens
	decide_role
	log "role $ROLE, node $NODE_NAME ($NODE_IP), endpoint $ENDPOINT:$API_PORT, stand-in $STANDIN"
	setup_proxy
	install_packages
	case $ROLE in
	main-master) main_master ;;
	*) join_node ;;
	esac
}

main "$@"
