#!/usr/bin/env bats
# Tests of scripts/install_k8s_cluster.sh with stubbed commands: PATH starts
# with a directory of stubs (kubeadm, kubectl, sudo, apt-get, systemctl...)
# that log their calls to $STUB_LOG and never touch the machine. `id` says
# uid 1000 so that every privileged step goes through the sudo stub, which
# only logs system-changing commands. Run: bats test/bats

SCRIPT="$BATS_TEST_DIRNAME/../../scripts/install_k8s_cluster.sh"
HASH=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
KEY=fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210
TOKEN=abcdef.0123456789abcdef

setup() {
	STUBS="$BATS_TEST_TMPDIR/stubs"
	mkdir -p "$STUBS" "$BATS_TEST_TMPDIR/root" "$BATS_TEST_TMPDIR/home" "$BATS_TEST_TMPDIR/state"
	export STUB_LOG="$BATS_TEST_TMPDIR/calls.log" STUB_STATE="$BATS_TEST_TMPDIR/state"
	export K8S_INSTALL_ROOT="$BATS_TEST_TMPDIR/root" STUB_HOME="$BATS_TEST_TMPDIR/home"
	export K8S_STANDIN_MARKER="$BATS_TEST_TMPDIR/k8s-standin"
	export STUB_HOSTNAME=Node-1 STUB_IPS="10.0.0.11 "
	touch "$STUB_LOG" "$K8S_STANDIN_MARKER"
	unset http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY ha_flag

	stub kubeadm <<-'EOF'
		echo "kubeadm $* no_proxy=${no_proxy:-}" >>"$STUB_LOG"
		prev=""
		for a in "$@"; do [ "$prev" != --config ] || sed 's/^/config: /' "$a" >>"$STUB_LOG"; prev=$a; done
		k="$K8S_INSTALL_ROOT/etc/kubernetes"
		case "$1 $2" in
		"init phase") printf '[upload-certs] Storing the certificates\n[upload-certs] Using certificate key:\n%s\n' "${STUB_CERT_KEY:-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210}" ;;
		init*)
			[ -z "${STUB_INIT_FAIL:-}" ] || { echo "[preflight] Some fatal errors occurred: boom"; exit 1; }
			mkdir -p "$k/pki" "$k/manifests"; touch "$k/admin.conf" "$k/manifests/kube-apiserver.yaml"
			echo "-----BEGIN CERTIFICATE-----" >"$k/pki/ca.crt"; touch "$STUB_STATE/initialized"
			[ -z "${STUB_INIT_KEY:-}" ] || printf '[upload-certs] Using certificate key:\n%s\n' "$STUB_INIT_KEY"
			echo "Your Kubernetes control-plane has initialized successfully!" ;;
		"token create") echo "kubeadm join 10.0.0.11:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef " ;;
		join*)
			[ -z "${STUB_JOIN_FAIL:-}" ] || { echo "error execution phase preflight: couldn't validate the identity of the API Server"; exit 1; }
			mkdir -p "$k/pki"; touch "$k/kubelet.conf" "$k/pki/ca.crt"; echo "This node has joined the cluster:" ;;
		reset*) rm -rf "$k"; echo "[reset] done" ;;
		*) echo "kubeadm stub: unexpected $*" >&2; exit 2 ;;
		esac
	EOF
	stub kubectl <<-'EOF'
		echo "kubectl $*" >>"$STUB_LOG"
		case " $* " in
		*" apply -f - "*) cat >>"$STUB_STATE/applied.yaml"; echo "---" >>"$STUB_STATE/applied.yaml" ;;
		*" get node "*) { [ -e "$STUB_STATE/initialized" ] || [ -e "$K8S_INSTALL_ROOT/etc/kubernetes/kubelet.conf" ]; } && echo "node/x" ;;
		*) exit 0 ;;
		esac
	EOF
	stub sudo <<-'EOF'
		echo "sudo $*" >>"$STUB_LOG"
		while [ "${1#-}" != "$1" ]; do shift; done
		case $1 in
		kubeadm | kubectl | base64 | test | rm | install) exec "$@" ;;
		tee) shift; if [ -n "${STUB_TEE:-}" ]; then exec tee "$@"; fi; cat >/dev/null ;;
		esac
		exit 0
	EOF
	stub id <<-'EOF'
		case "$*" in
		-un) echo ubuntu ;;
		*) echo 1000 ;;
		esac
	EOF
	stub hostname <<-'EOF'
		if [ "${1:-}" = -I ]; then echo "$STUB_IPS"; else echo "$STUB_HOSTNAME"; fi
	EOF
	stub getent <<-'EOF'
		echo "ubuntu:x:1000:1000::$STUB_HOME:/bin/bash"
	EOF
	stub dpkg-query <<-'EOF'
		pkg=${!#}
		case $pkg in
		kubeadm) v=${STUB_KUBEADM_VERSION:-} ;;
		containerd.io) v=${STUB_CONTAINERD_VERSION:-} ;;
		*) v= ;;
		esac
		[ -n "$v" ] || exit 1
		printf '%s' "$v"
	EOF
	stub containerd <<-'EOF'
		echo "SystemdCgroup = false"
	EOF
	for c in apt-get apt-mark curl gpg systemctl swapoff modprobe sysctl; do
		stub "$c" <<-'EOF'
			echo "$(basename "$0") $*" >>"$STUB_LOG"
		EOF
	done
	export PATH="$STUBS:$PATH"
}

stub() {
	{
		echo '#!/bin/bash'
		cat
	} >"$STUBS/$1"
	chmod +x "$STUBS/$1"
}

# refute_log fails when the call log matches the extended regexp.
refute_log() {
	if grep -qE -- "$1" "$STUB_LOG"; then
		echo "unexpected call matching '$1':" >&2
		cat "$STUB_LOG" >&2
		return 1
	fi
}

result() { grep -E "^VNFM_RESULT $1=" <<<"$output" | head -1 | cut -d= -f2-; }

@test "-h prints the usage" {
	run bash "$SCRIPT" -h
	[ "$status" -eq 0 ]
	[[ $output == *"-m IPS     master mode"* ]]
	[[ $output == *"VNFM_RESULT key=value"* ]]
}

@test "flag errors exit non-zero with a status=failed line" {
	run bash "$SCRIPT"
	[ "$status" -eq 1 ]
	[[ $output == *"one of -m (master) or -w (worker) is required"* ]]
	[ "$(result status)" = failed ]

	run bash "$SCRIPT" -m 10.0.0.11 -w 10.0.0.12
	[ "$status" -eq 1 ]
	[[ $output == *"mutually exclusive"* ]]
	run bash "$SCRIPT" -m 10.0.0.300
	[ "$status" -eq 1 ]
	[[ $output == *"-m: invalid IP address '10.0.0.300'"* ]]
	run bash "$SCRIPT" -m 10.0.0.11 -p 192.168.0.0/40
	[ "$status" -eq 1 ]
	[[ $output == *"-p: invalid CIDR"* ]]
	run bash "$SCRIPT" -w 10.0.0.12 -i 10.0.0.11 -t BAD -s "$HASH"
	[ "$status" -eq 1 ]
	[[ $output == *"-t: invalid bootstrap token"* ]]
	run bash "$SCRIPT" -w 10.0.0.12 -i 10.0.0.11 -t "$TOKEN" -s sha256:1234
	[ "$status" -eq 1 ]
	[[ $output == *"-s: invalid CA certificate hash"* ]]
	run bash "$SCRIPT" -m 10.0.0.11 -k nothex
	[ "$status" -eq 1 ]
	[[ $output == *"-k: invalid certificate key"* ]]
	run bash "$SCRIPT" -m 10.0.0.11 --bogus
	[ "$status" -eq 1 ]
	[[ $output == *"unknown option: --bogus"* ]]
	run bash "$SCRIPT" -m
	[ "$status" -eq 1 ]
	[[ $output == *"option -m needs a value"* ]]
	run bash "$SCRIPT" -w 10.0.0.12
	[ "$status" -eq 1 ]
	[[ $output == *"-i (cluster endpoint IP) is required"* ]]
	run bash "$SCRIPT" -w 10.0.0.12 -i 10.0.0.11 --api-port 70000
	[ "$status" -eq 1 ]
	[[ $output == *"--api-port: invalid port"* ]]
	# nothing was run
	refute_log kubeadm
}

@test "joins need their credentials" {
	run bash "$SCRIPT" -w 10.0.0.12 -i 10.0.0.11 -s "$HASH"
	[ "$status" -eq 1 ]
	[[ $output == *"-t (token) is required to join a worker node"* ]]
	run bash "$SCRIPT" -w 10.0.0.12 -i 10.0.0.11 -t "$TOKEN"
	[ "$status" -eq 1 ]
	[[ $output == *"-s (CA certificate hash) is required"* ]]
	STUB_IPS="10.0.0.12" run bash "$SCRIPT" -m 10.0.0.11,10.0.0.12,10.0.0.13 -t "$TOKEN" -s "$HASH"
	[ "$status" -eq 1 ]
	[[ $output == *"-k (certificate key) is required to join a control-plane node"* ]]
	STUB_IPS="10.0.0.99" run bash "$SCRIPT" -m 10.0.0.11,10.0.0.12 -t "$TOKEN" -s "$HASH" -k "$KEY"
	[ "$status" -eq 1 ]
	[[ $output == *"none of the master IPs (10.0.0.11,10.0.0.12) is an address of this node"* ]]
}

@test "main master on the stand-in: kubeadm init and the result lines" {
	run bash "$SCRIPT" -m 10.0.0.11 -i 10.0.0.11 -p 10.244.0.0/16 -a 10.96.0.0/16
	[ "$status" -eq 0 ]
	[ "$(result status)" = installed ]
	[ "$(result role)" = main-master ]
	[ "$(result node_name)" = node-1 ]
	[ "$(result node_ip)" = 10.0.0.11 ]
	[ "$(result standin)" = true ]
	[ "$(result api_endpoint)" = https://10.0.0.11:6443 ]
	[ "$(result join_token)" = "$TOKEN" ]
	[ "$(result ca_cert_hash)" = "sha256:$HASH" ]
	[ "$(result ca_cert_b64 | base64 -d)" = "-----BEGIN CERTIFICATE-----" ]
	[ -z "$(result certificate_key)" ]
	[[ $output == *"Install Success!"* ]]
	grep -q -- "kubeadm init --control-plane-endpoint 10.0.0.11:6443 --apiserver-advertise-address 10.0.0.11 --pod-network-cidr 10.244.0.0/16 --service-cidr 10.96.0.0/16 --node-name node-1 --apiserver-bind-port 6443" "$STUB_LOG"
	refute_log "--upload-certs"
	grep -q -- "kubeadm token create --ttl 1h --print-join-command" "$STUB_LOG"
	# the stand-in needs no packages and no CNI
	refute_log "^(apt-get|curl|systemctl)"
	refute_log "kubectl .* apply"
	# the SSH user gets a kubeconfig
	grep -q "sudo -n -E cp $K8S_INSTALL_ROOT/etc/kubernetes/admin.conf $STUB_HOME/.kube/config" "$STUB_LOG"
}

@test "HA main master: port 16443, --upload-certs, certificate key" {
	run bash "$SCRIPT" -m 10.0.0.11,10.0.0.12,10.0.0.13 -i 10.0.0.80
	[ "$status" -eq 0 ]
	[ "$(result api_endpoint)" = https://10.0.0.80:16443 ]
	[ "$(result certificate_key)" = "$KEY" ]
	grep -q -- "kubeadm init --control-plane-endpoint 10.0.0.80:16443 .* --upload-certs" "$STUB_LOG"
	refute_log "--apiserver-bind-port"
	grep -q -- "kubeadm init phase upload-certs --upload-certs" "$STUB_LOG"
}

@test "HA main master: the certificate key kubeadm init printed, no second upload" {
	STUB_INIT_KEY=$HASH run bash "$SCRIPT" -m 10.0.0.11,10.0.0.12,10.0.0.13 -i 10.0.0.80
	[ "$status" -eq 0 ]
	[ "$(result certificate_key)" = "$HASH" ]
	refute_log "kubeadm init phase upload-certs"
	# initialised before: no init output, the certificates are uploaded again
	STUB_INIT_KEY=$HASH run bash "$SCRIPT" -m 10.0.0.11,10.0.0.12,10.0.0.13 -i 10.0.0.80
	[ "$(result status)" = already-installed ]
	[ "$(result certificate_key)" = "$KEY" ]
	grep -q -- "kubeadm init phase upload-certs --upload-certs" "$STUB_LOG"
}

@test "HA main master with etcd SANs: kubeadm init --config with the same settings" {
	run bash "$SCRIPT" -m 10.0.0.11,10.0.0.12,10.0.0.13 -i 10.0.0.80 -p 10.244.0.0/16 --node-name master-a --etcd-cert-sans 10.0.0.80
	[ "$status" -eq 0 ]
	[ "$(result api_endpoint)" = https://10.0.0.80:16443 ]
	grep -qE -- "kubeadm init --config [^ ]+/kubeadm-init.yaml --upload-certs" "$STUB_LOG"
	# kubeadm refuses most flags next to --config
	refute_log "kubeadm init .*--(control-plane-endpoint|node-name|pod-network-cidr|apiserver)"
	for want in "apiVersion: kubeadm.k8s.io/v1beta4" "kind: InitConfiguration" '  advertiseAddress: "10.0.0.11"' "  bindPort: 6443" \
		'  name: "master-a"' "kind: ClusterConfiguration" 'controlPlaneEndpoint: "10.0.0.80:16443"' '  podSubnet: "10.244.0.0/16"' \
		'  serviceSubnet: "10.96.0.0/12"' "    serverCertSANs:" '    - "10.0.0.80"'; do
		grep -qxF -- "config: $want" "$STUB_LOG" || { echo "config lacks: $want"; cat "$STUB_LOG"; false; }
	done
	# the file is gone afterwards
	cfg=$(grep -oE -- "--config [^ ]+" "$STUB_LOG" | cut -d' ' -f2)
	[ ! -e "$cfg" ]
}

@test "etcd SANs are checked; an older Kubernetes gets kubeadm v1beta3" {
	run bash "$SCRIPT" -m 10.0.0.11,10.0.0.12 -i 10.0.0.80 --etcd-cert-sans '10.0.0.80,bad name'
	[ "$status" -eq 1 ]
	[[ $output == *"--etcd-cert-sans: 'bad name' is neither an IPv4 address nor a DNS name"* ]]
	K8S_VERSION=v1.30.8 run bash "$SCRIPT" -m 10.0.0.11 -i 10.0.0.11 --etcd-cert-sans etcd.example
	[ "$status" -eq 0 ]
	grep -qxF "config: apiVersion: kubeadm.k8s.io/v1beta3" "$STUB_LOG"
	grep -qxF "config:   bindPort: 6443" "$STUB_LOG"
	grep -qxF 'config:     - "etcd.example"' "$STUB_LOG"
	refute_log "--upload-certs"
}

@test "Kuryr: the configuration becomes a Secret, then the pinned manifests; no kube-proxy" {
	conf="$BATS_TEST_TMPDIR/kuryr.conf"
	printf '[neutron]\napplication_credential_secret = s3cr3t-value\n' >"$conf"
	rm -f "$K8S_STANDIN_MARKER"
	printf 'ID=ubuntu\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\n' >"$BATS_TEST_TMPDIR/os-release"
	K8S_INSTALL_OS_RELEASE="$BATS_TEST_TMPDIR/os-release" run bash "$SCRIPT" -m 10.0.0.11 -i 10.0.0.11 --cni kuryr --kuryr-config "$conf"
	[ "$status" -eq 0 ]
	[ "$(result cni)" = kuryr ]
	applied="$STUB_STATE/applied.yaml"
	# the Secret first, with the file's content, which is then removed
	head -5 "$applied" | grep -qx "kind: Secret"
	grep -qx "  kuryr.conf: $(base64 -w0 <<<"$(printf '[neutron]\napplication_credential_secret = s3cr3t-value')")" "$applied"
	[ ! -e "$conf" ]
	# the manifests: CRDs, RBAC, the controller and the CNI daemon with the pinned images
	for kind in CustomResourceDefinition ServiceAccount ClusterRole ClusterRoleBinding ConfigMap Deployment DaemonSet; do
		grep -qx "kind: $kind" "$applied" || { echo "no $kind"; cat "$applied"; false; }
	done
	grep -q "image: docker.io/kuryr/controller:2024.1" "$applied"
	grep -q "image: docker.io/kuryr/cni:2024.1" "$applied"
	grep -q "api_root = https://10.0.0.11:6443" "$applied"
	grep -q "secret: {secretName: kuryr-config, defaultMode: 0400}" "$applied"
	grep -q "kubeadm init .*--skip-phases=addon/kube-proxy" "$STUB_LOG"
	refute_log "calico"
	# the credential is in no argument and no output
	refute_log "s3cr3t-value"
	[[ $output != *"s3cr3t-value"* ]]
}

@test "Kuryr on the stand-in: the Secret, the manifests and a kuryr-controller static pod" {
	conf="$BATS_TEST_TMPDIR/kuryr.conf"
	printf '[neutron]\napplication_credential_secret = x\n' >"$conf"
	STUB_TEE=1 KURYR_CONTROLLER_IMAGE=registry.local/kuryr/controller@sha256:0123 run bash "$SCRIPT" -m 10.0.0.11 --cni kuryr --kuryr-config "$conf"
	[ "$status" -eq 0 ]
	grep -q "image: registry.local/kuryr/controller@sha256:0123" "$STUB_STATE/applied.yaml"
	pod="$K8S_INSTALL_ROOT/etc/kubernetes/manifests/kuryr-controller.yaml"
	grep -q "command: \[kuryr-controller, --config-file, /etc/kuryr/kuryr.conf\]" "$pod"
	grep -q "application_credential_secret = x" "$K8S_INSTALL_ROOT/etc/kuryr/kuryr.conf"
	[ "$(stat -c %a "$K8S_INSTALL_ROOT/etc/kuryr/kuryr.conf")" = 600 ]
	[ ! -e "$conf" ]
}

@test "Kuryr flag errors" {
	run bash "$SCRIPT" -m 10.0.0.11 --cni flannel
	[ "$status" -eq 1 ]
	[[ $output == *"--cni: 'flannel' is not a supported pod network (calico or kuryr)"* ]]
	run bash "$SCRIPT" -m 10.0.0.11 --cni kuryr
	[ "$status" -eq 1 ]
	[[ $output == *"--cni kuryr needs --kuryr-config"* ]]
	run bash "$SCRIPT" -m 10.0.0.11 --kuryr-config /x
	[ "$status" -eq 1 ]
	[[ $output == *"--kuryr-config is used only with --cni kuryr"* ]]
	run bash "$SCRIPT" -m 10.0.0.11 --cni kuryr --kuryr-config "$BATS_TEST_TMPDIR/missing.conf"
	[ "$status" -eq 1 ]
	[[ $output == *"--kuryr-config: cannot read"* ]]
	# a worker needs no configuration
	STUB_IPS=10.0.0.21 run bash "$SCRIPT" -w 10.0.0.21 -i 10.0.0.11 -t "$TOKEN" -s "$HASH" --cni kuryr
	[ "$status" -eq 0 ]
	[ "$(result cni)" = kuryr ]
	refute_log "apply"
}

@test "re-running on an initialised master does not init again" {
	run bash "$SCRIPT" -m 10.0.0.11
	[ "$status" -eq 0 ]
	: >"$STUB_LOG"
	run bash "$SCRIPT" -m 10.0.0.11
	[ "$status" -eq 0 ]
	[ "$(result status)" = already-installed ]
	[ "$(result join_token)" = "$TOKEN" ]
	refute_log "kubeadm init"
	refute_log "kubeadm reset"
}

@test "a half-done init is reset first; an init failure is reported" {
	mkdir -p "$K8S_INSTALL_ROOT/etc/kubernetes/manifests"
	touch "$K8S_INSTALL_ROOT/etc/kubernetes/manifests/kube-apiserver.yaml"
	STUB_INIT_FAIL=1 run bash "$SCRIPT" -m 10.0.0.11
	[ "$status" -eq 1 ]
	grep -q "kubeadm reset -f" "$STUB_LOG"
	[ "$(result status)" = failed ]
	[[ $(result error) == *"kubeadm init failed: [preflight] Some fatal errors occurred: boom"* ]]
	[[ $output == *"Install Failed!"* ]]
}

@test "worker join: bare hash, ha_flag port, node name, idempotent re-run" {
	ha_flag=True STUB_IPS=10.0.0.21 run bash "$SCRIPT" -w 10.0.0.21 -i 10.0.0.80 -t "$TOKEN" -s "$HASH" --node-name worker-a
	[ "$status" -eq 0 ]
	[ "$(result status)" = installed ]
	[ "$(result role)" = worker ]
	[ "$(result node_name)" = worker-a ]
	grep -q -- "kubeadm join 10.0.0.80:16443 --token $TOKEN --discovery-token-ca-cert-hash sha256:$HASH --node-name worker-a" "$STUB_LOG"
	refute_log "--control-plane"
	# it saw its own Node with the kubelet's credentials
	[ "$(result node_registered)" = true ]
	grep -q -- "kubectl --kubeconfig $K8S_INSTALL_ROOT/etc/kubernetes/kubelet.conf get node worker-a -o name" "$STUB_LOG"
	: >"$STUB_LOG"
	run bash "$SCRIPT" -w 10.0.0.21 -i 10.0.0.80 -t "$TOKEN" -s "$HASH"
	[ "$status" -eq 0 ]
	[ "$(result status)" = already-installed ]
	refute_log "kubeadm join"
}

@test "--no-join-token: the main master makes no join token" {
	run bash "$SCRIPT" -m 10.0.0.11 -i 10.0.0.11 --no-join-token
	[ "$status" -eq 0 ]
	[ "$(result status)" = installed ]
	[ -z "$(result join_token)" ]
	[ -z "$(result ca_cert_hash)" ]
	[ "$(result ca_cert_b64 | base64 -d)" = "-----BEGIN CERTIFICATE-----" ]
	refute_log "kubeadm token create"
}

@test "--bootstrap-tokens-stdin: kubeadm init makes the caller's tokens, from a root-only file; not again on a re-run" {
	tokens="abcdef.0123456789abcdef mini-VNFM join of w1 (op it's)
ghijkl.0123456789ghijkl mini-VNFM control-plane join of m2"
	run bash "$SCRIPT" -m 10.0.0.11 -i 10.0.0.11 --no-join-token --token-ttl 3600s --bootstrap-tokens-stdin <<<"$tokens"
	[ "$status" -eq 0 ]
	[ "$(result bootstrap_tokens)" = created ]
	# a single master without etcd SANs goes through --config too, same settings
	grep -qE -- "kubeadm init --config [^ ]+/kubeadm-init.yaml" "$STUB_LOG"
	refute_log "kubeadm init .*--(control-plane-endpoint|node-name|pod-network-cidr|apiserver|token)"
	for want in "bootstrapTokens:" "- token: 'abcdef.0123456789abcdef'" "  description: 'mini-VNFM join of w1 (op it''s)'" "  ttl: '3600s'" \
		"- token: 'ghijkl.0123456789ghijkl'" "  description: 'mini-VNFM control-plane join of m2'" \
		"  usages: [signing, authentication]" "  groups: [system:bootstrappers:kubeadm:default-node-token]" "  bindPort: 6443" \
		'controlPlaneEndpoint: "10.0.0.11:6443"'; do
		grep -qxF -- "config: $want" "$STUB_LOG" || { echo "config lacks: $want"; cat "$STUB_LOG"; false; }
	done
	[ "$(grep -c '^config: - token:' "$STUB_LOG")" -eq 2 ]
	refute_log "config: etcd:"
	# the tokens never reach the command line or the output
	refute_log "kubeadm .*0123456789abcdef"
	[[ $output != *0123456789abcdef* ]]
	cfg=$(grep -oE -- "--config [^ ]+" "$STUB_LOG" | cut -d' ' -f2)
	[ ! -e "$cfg" ]
	# initialised already: kubeadm makes nothing, the caller must
	run bash "$SCRIPT" -m 10.0.0.11 -i 10.0.0.11 --no-join-token --bootstrap-tokens-stdin <<<"$tokens"
	[ "$(result status)" = already-installed ]
	[ -z "$(result bootstrap_tokens)" ]
	# not a bootstrap token: refused before anything runs
	rm -rf "$K8S_INSTALL_ROOT/etc/kubernetes" "$STUB_STATE/initialized"
	: >"$STUB_LOG"
	run bash "$SCRIPT" -m 10.0.0.11 -i 10.0.0.11 --bootstrap-tokens-stdin <<<"not-a-token desc"
	[ "$status" -eq 1 ]
	[[ $output == *"--bootstrap-tokens-stdin: a line is not"* ]]
	refute_log "kubeadm init"
}

@test "kubeadm's own time is reported after an init or a join, not when nothing ran" {
	run bash "$SCRIPT" -m 10.0.0.11 -i 10.0.0.11
	[ "$status" -eq 0 ]
	[[ $(result kubeadm_started) =~ ^[0-9]{10}\.[0-9]+$ ]]
	[[ $(result kubeadm_seconds) =~ ^[0-9]+\.[0-9]{3}$ ]]
	run bash "$SCRIPT" -m 10.0.0.11 -i 10.0.0.11
	[ "$(result status)" = already-installed ]
	[ -z "$(result kubeadm_seconds)" ]
	STUB_IPS=10.0.0.21 run bash "$SCRIPT" -w 10.0.0.21 -i 10.0.0.11 -t "$TOKEN" -s "$HASH"
	[ "$(result status)" = installed ]
	[[ $(result kubeadm_seconds) =~ ^[0-9]+\.[0-9]{3}$ ]]
}

@test "--prepare: packages only, no kubeadm, what the node holds; joins need no credentials" {
	run bash "$SCRIPT" --prepare -w 10.0.0.21 -i 10.0.0.11
	[ "$status" -eq 0 ]
	[ "$(result status)" = prepared ]
	[ "$(result kubelet_conf)" = absent ]
	[ "$(result control_plane)" = absent ]
	[[ $output == *"Prepare Success!"* ]]
	refute_log "^kubeadm"
	mkdir -p "$K8S_INSTALL_ROOT/etc/kubernetes/manifests"
	touch "$K8S_INSTALL_ROOT/etc/kubernetes/kubelet.conf" "$K8S_INSTALL_ROOT/etc/kubernetes/manifests/etcd.yaml"
	run bash "$SCRIPT" --prepare -m 10.0.0.11,10.0.0.12 -i 10.0.0.80 --control-plane-join --node-ip 10.0.0.12
	[ "$status" -eq 0 ]
	[ "$(result kubelet_conf)" = present ]
	[ "$(result control_plane)" = present ]
	refute_log "^kubeadm"
	# a real node gets its packages
	rm -f "$K8S_STANDIN_MARKER"
	printf 'ID=ubuntu\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\n' >"$BATS_TEST_TMPDIR/os-release"
	K8S_INSTALL_OS_RELEASE="$BATS_TEST_TMPDIR/os-release" run bash "$SCRIPT" --prepare -w 10.0.0.21 -i 10.0.0.11
	[ "$status" -eq 0 ]
	[ "$(result standin)" = false ]
	grep -q "sudo -n -E apt-get install -y -q kubelet=1.31.4-1.1 kubeadm=1.31.4-1.1 kubectl=1.31.4-1.1" "$STUB_LOG"
	refute_log "^kubeadm"
}

@test "a half-joined worker is reset and joined again" {
	mkdir -p "$K8S_INSTALL_ROOT/etc/kubernetes/pki"
	touch "$K8S_INSTALL_ROOT/etc/kubernetes/pki/ca.crt"
	run bash "$SCRIPT" -w 10.0.0.21 -i 10.0.0.11 -t "$TOKEN" -s "$HASH"
	[ "$status" -eq 0 ]
	[ "$(result status)" = installed ]
	[ "$(grep -n '^kubeadm reset -f' "$STUB_LOG" | cut -d: -f1)" -lt "$(grep -n '^kubeadm join' "$STUB_LOG" | cut -d: -f1)" ]
}

@test "a failed join exits non-zero with kubeadm's error" {
	STUB_JOIN_FAIL=1 run bash "$SCRIPT" -w 10.0.0.21 -i 10.0.0.11 -t "$TOKEN" -s "$HASH"
	[ "$status" -eq 1 ]
	[ "$(result status)" = failed ]
	[[ $output == *"couldn't validate the identity of the API Server"* ]]
}

@test "control-plane join from the second master IP" {
	STUB_IPS="10.0.0.12 172.17.0.1" run bash "$SCRIPT" -m 10.0.0.11,10.0.0.12,10.0.0.13 -i 10.0.0.80 -t "$TOKEN" -s "sha256:$HASH" -k "$KEY"
	[ "$status" -eq 0 ]
	[ "$(result role)" = control-plane ]
	[ "$(result node_ip)" = 10.0.0.12 ]
	grep -q -- "kubeadm join 10.0.0.80:16443 --token $TOKEN --discovery-token-ca-cert-hash sha256:$HASH --node-name node-1 --control-plane --certificate-key $KEY --apiserver-advertise-address 10.0.0.12" "$STUB_LOG"
	# --control-plane-join forces the role even on the first IP
	rm -rf "$K8S_INSTALL_ROOT/etc"
	run bash "$SCRIPT" -m 10.0.0.11,10.0.0.12 -t "$TOKEN" -s "$HASH" -k "$KEY" --control-plane-join --node-ip 10.0.0.11
	[ "$status" -eq 0 ]
	[ "$(result role)" = control-plane ]
}

@test "proxy settings reach kubeadm with no_proxy extended" {
	run bash "$SCRIPT" -m 10.0.0.11 --http-proxy http://proxy:3128 --no-proxy example.org
	[ "$status" -eq 0 ]
	grep -q "kubeadm init .* no_proxy=example.org,127.0.0.1,localhost,192.168.0.0/16,10.96.0.0/12,10.0.0.11,10.0.0.11" "$STUB_LOG"
}

@test "real install: pinned packages from pkgs.k8s.io, pinned containerd and Calico" {
	rm -f "$K8S_STANDIN_MARKER"
	printf 'ID=ubuntu\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\nPRETTY_NAME="Ubuntu 22.04.5 LTS"\n' >"$BATS_TEST_TMPDIR/os-release"
	K8S_INSTALL_OS_RELEASE="$BATS_TEST_TMPDIR/os-release" run bash "$SCRIPT" -m 10.0.0.11
	[ "$status" -eq 0 ]
	[ "$(result standin)" = false ]
	grep -q "sudo -n -E apt-get install -y -q --allow-downgrades containerd.io=1.7.24-1" "$STUB_LOG"
	grep -q "sudo -n -E apt-get install -y -q kubelet=1.31.4-1.1 kubeadm=1.31.4-1.1 kubectl=1.31.4-1.1" "$STUB_LOG"
	grep -q "sudo -n -E apt-mark hold kubelet kubeadm kubectl" "$STUB_LOG"
	grep -q "curl -fsSL https://pkgs.k8s.io/core:/stable:/v1.31/deb/Release.key" "$STUB_LOG"
	grep -q "sudo -n -E swapoff -a" "$STUB_LOG"
	grep -q "kubectl --kubeconfig /etc/kubernetes/admin.conf apply -f https://raw.githubusercontent.com/projectcalico/calico/v3.28.2/manifests/calico.yaml" "$STUB_LOG"
}

@test "real install: installed packages are detected and kept" {
	rm -f "$K8S_STANDIN_MARKER"
	printf 'ID=ubuntu\nVERSION_ID="24.04"\nVERSION_CODENAME=noble\n' >"$BATS_TEST_TMPDIR/os-release"
	export K8S_INSTALL_OS_RELEASE="$BATS_TEST_TMPDIR/os-release"
	STUB_KUBEADM_VERSION=1.31.4-1.1 STUB_CONTAINERD_VERSION=1.7.24-1 run bash "$SCRIPT" -w 10.0.0.21 -i 10.0.0.11 -t "$TOKEN" -s "$HASH"
	[ "$status" -eq 0 ]
	refute_log "apt-get install"
	[[ $output == *"kubeadm 1.31.4-1.1 already installed"* ]]
	STUB_KUBEADM_VERSION=1.30.1-1.1 run bash "$SCRIPT" -w 10.0.0.21 -i 10.0.0.11 -t "$TOKEN" -s "$HASH"
	[ "$status" -eq 1 ]
	[[ $output == *"kubeadm 1.30.1-1.1 is installed but 1.31.4-1.1 is pinned"* ]]
}

@test "real install refuses an unsupported OS" {
	rm -f "$K8S_STANDIN_MARKER"
	printf 'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12"\n' >"$BATS_TEST_TMPDIR/os-release"
	K8S_INSTALL_OS_RELEASE="$BATS_TEST_TMPDIR/os-release" run bash "$SCRIPT" -m 10.0.0.11
	[ "$status" -eq 1 ]
	[[ $output == *"unsupported OS Debian GNU/Linux 12"* ]]
}
