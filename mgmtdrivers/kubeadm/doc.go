// Package kubeadm is the kubeadm management driver (name "kubeadm"; VNFDs
// bind it with builtin:kubeadm, or Tacker's mgmt-drivers-kubernetes /
// kubernetes_mgmt.py). It turns a VNF's VMs into a Kubernetes cluster over
// SSH, registers the cluster as a Kubernetes VIM, and keeps the cluster in
// step when workers are scaled or healed. One master, or an HA control
// plane: 3 or more (odd) masters behind HAProxy and a keepalived VIP, with
// quorum-safe master heal (see "HA control plane" below and docs/kubeadm-ha.md).
//
// # Parameters
//
// additionalParams.k8s_cluster_installation_param, as Tacker's:
//
//	script_path   package path of the install script; it must be our
//	              scripts/install_k8s_cluster.sh (it prints VNFM_RESULT
//	              lines). Optional: without it the driver's built-in copy
//	              (generated, install_k8s_cluster.sh here) is used.
//	vim_name      name of the registered VIM (default kubernetes_vim_<id>)
//	master_node   aspect_id | vdu_id, ssh_cp_name, nic_cp_name (default
//	              ssh_cp_name), username, password | ssh_private_key
//	              (+ ssh_private_key_passphrase), pod_cidr (192.168.0.0/16),
//	              cluster_cidr (service CIDR, 10.96.0.0/12), cluster_cp_name
//	              (the CP holding the API address; required),
//	              cluster_fip_name (refused: the API certificate would not
//	              name the floating IP)
//	worker_node   aspect_id | vdu_id, ssh_cp_name, nic_cp_name, username,
//	              password | ssh_private_key (+ passphrase)
//	proxy         http_proxy, https_proxy, no_proxy, k8s_node_cidr
//
// cluster_cp_name is a master's own port for one master, or a port of its
// own (Tacker's vip_CP, the VNFD's VipCp) for an HA control plane.
//
// and our own: worker_parallelism (joins and drains at a time, default 10,
// at most 100), drain_timeout (seconds or a duration, default 300 s),
// drain_policy ("fail", the default, or "force"), kubernetes_version
// (passed to the script as K8S_VERSION; default the script's pin),
// join_token_ttl (default 15 min), ha (lb_port: HAProxy's port on the VIP,
// default 16443; virtual_router_id: 1..255, default derived from the VNF
// instance id; vrrp_interface: default the interface holding the node
// address; vrrp_unicast: unicast VRRP to the other masters instead of
// multicast; vrrp_advert_int: seconds, default 1; etcd_lb_port: HAProxy's
// etcd frontend on the VIP, default 12379, 0 for none — see etcdlb.go and
// docs/kubeadm-ha.md). Tacker's helm, private registry and NFS
// storage extras are refused with a clear message. CIDRs follow the one
// rule of mgmtdrivers/kube: host bits set are refused, naming the network
// (Tacker's guide writes 192.168.3.0/16: give 192.168.0.0/16).
//
// The parameters are Params, parsed once when the request is accepted
// (ParseParams, mgmtdrivers.Typed): every problem is reported at once, each
// with its JSON path (kube.ParamError); numbers may be given as strings;
// the connection point names are checked against the VNFD, script_path
// against the package, the HA and load balancer plan against the VNFD and
// the infra driver (the VIP allowed on the ports). Every hook gets them
// typed. Scale, heal and terminate requests start from what the
// instantiation accepted and may override the credentials
// (master_node_username, master_node_password, worker_node_username,
// worker_node_password — Tacker's — and
// {master,worker}_node_ssh_private_key[_passphrase]), drain_timeout,
// drain_policy, worker_parallelism, and a heal's force; a scale of an
// aspect that scales the masters (or the dedicated load balancers), a heal
// the driver cannot do, and a terminate or entire heal whose cluster VIM
// other instances refer to are refused then, before anything changes.
//
// # Nodes
//
// Classify finds masters and workers among the VNF's compute resources
// (driverapi.ComputeResource, as the infra driver describes them; the
// classifier is kube.Classify, shared with kubespray): a role's vdu_id,
// else its aspect_id (the resource's scaling group, i.e. Tacker's
// AutoScalingGroup named after the aspect, or a VNFD aspect scaling its
// VDU), else its CP names. The node IP is the nic_cp_name CP's
// address, SSH goes to the ssh_cp_name CP's address (or, Tacker's
// floating-IP layout, the floating IP of the nic CP's port). Node names are
// the VNFC ids made DNS labels ("workerNode-ab3xq6rfl2vc" →
// "workernode-ab3xq6rfl2vc"): unique, stable across a VNFC heal, never
// Tacker's master<last octet>. Every node's /etc/hosts gets a managed block
// listing all nodes, rewritten in place on every membership change.
//
// # SSH
//
// Through internal/remote: password or key login, host keys verified
// against the fingerprints the cloud published (VNFC metadata
// sshHostKeyFingerprints) and pinned per server id + address in the PinStore
// (Postgres). A hook connects to every node it needs before running
// anything: a host key mismatch fails the hook with nothing run on any node,
// naming the host and both fingerprints. New VMs get authentication retries
// while cloud-init sets their password. A healed VNFC is a new server (new
// pin key); one rebuilt under the same id is re-pinned; the pins of removed
// and replaced servers are dropped. Values in command lines are quoted,
// secrets (passwords, join tokens, the VIM token, proxy passwords) masked.
// Commands run with sudo; the script is uploaded root-owned to
// /var/lib/mini-vnfm.
//
// # Hooks
//
// instantiate_end follows the build's critical path (kubeadm init, then the
// control-plane joins) and runs the rest beside it. Every node is prepared
// at once (/etc/hosts, the install script uploaded, its --prepare run:
// proxy settings and packages, and what the node holds: a kubelet.conf or
// control-plane manifests), the HA load balancer and its VIP are set up,
// and the install script runs on the first master (-m, kubeadm init,
// --no-join-token) as soon as that master is prepared; the other nodes'
// preparation starts once that script runs. Once the init made the join
// material the workers join in parallel (worker_parallelism at a time, each
// after its own preparation, beside the control-plane joins of an HA
// cluster), each with a bootstrap token of its own: kubeadm init makes the
// tokens of all the hook's joins itself (the install script's
// --bootstrap-tokens-stdin: its configuration's bootstrapTokens, expiring
// after join_token_ttl), so they exist when the init ends; when the init
// was done before, they are bootstrap token Secrets created in one round
// trip (kubectl create, tokens.go). Each token is deleted as soon as its
// join no longer needs it (the kubelet has bootstrapped), those that became
// unused during a deletion together in the next, so the deletion after the
// last control-plane join carries only its token and the uploaded
// certificates; the tokens kubeadm init made otherwise are deleted in the
// background. A worker's install
// script waits (at most 10 s) for its Node with the kubelet's credentials,
// so the driver asks a master only when it did not see it. The first
// master's other work (the VIM, HAProxy's etcd frontend, the old tokens)
// waits until the critical path is under way. A node's connection carries at most
// 8 commands at once (sshd's MaxSessions), the workers' on the first master
// at most 4, so the control-plane joins keep room there. Each node's
// checkpoint output has kubeadm's own run time (kubeadmStarted,
// kubeadmSeconds). Proxy variables are exported with
// no_proxy extended by loopback, the pod and service CIDRs, the API
// address, k8s_node_cidr (default the first master's /24) and every node
// address. Each node is a progress checkpoint (Op.Progress): a retry skips
// nodes completed before, a worker already in `kubectl get nodes` is not
// joined again, one with a kubelet.conf but no Node object (a join that
// died half-way) is `kubeadm reset` first. Then the VIM: a ServiceAccount
// with an explicit kubernetes.io/service-account-token Secret (Kubernetes ≥
// 1.24) bound to cluster-admin; its token and the cluster CA are checked
// against https://<cluster_cp_name address>:6443/api/v1/nodes and registered
// (Op.Vims, idempotent by name) as vim_name; vimConnectionInfo gets
// {id, vimId, vimType ETSINFV.KUBERNETES.V_1, interfaceInfo {endpoint,
// ssl_ca_cert}, accessInfo {auth_url}, extra {vimName, managedBy}} — no
// secret.
//
// scale_start (SCALE_IN): the victims are Op.Victims (the VNFCs the infra
// driver chose and removes next; masters are refused); all are
// cordoned, then each is drained (--ignore-daemonsets
// --delete-emptydir-data, drain_timeout) and deleted from the cluster, in
// parallel. A drain that does not finish is, with drain_policy fail, a
// DrainError listing the pods left (the node stays cordoned; retry after
// freeing them); with force the pods left are deleted without eviction. A
// NotReady node is deleted without a drain. The victims leave /etc/hosts
// on the other nodes. scale_start also refuses aspects that scale the
// master VDU. scale_end (SCALE_OUT): /etc/hosts everywhere, the new
// workers (those not in the cluster) prepared and joined in parallel as
// above; after a
// SCALE_IN it drops the removed servers' pins.
//
// heal_start / heal_end with vnfcInstanceId: workers are drained and
// deleted, then the replacements (same name and address, new host key)
// joined; the single master cannot be healed on its own (heal the entire
// VNF). Without vnfcInstanceId (entire heal) heal_start removes the VIM and
// heal_end installs the new cluster as instantiate_end does.
//
// terminate_end removes the VIM and the vimConnectionInfo entry.
//
// # HA control plane
//
// When cluster_cp_name names a port of its own (the VIP), the masters (in
// VNFC id order, stable across heals) must be an odd number of at least 3,
// the master VDU's min_number_of_instances too, the VIP must not be a node
// address, a VipCp must target the masters' nic_cp_name, and the flavour's
// VIM must let the VIP's traffic through the masters' port (the infra
// driver answers: driverapi.Infra.CheckVIP; the OpenStack driver traces
// allowed_address_pairs in the flavour's Heat templates). The request is
// checked so when it is accepted, and instantiate_start checks again when a
// VNFD binds it. instantiate_end then writes, on every master, HAProxy
// (TCP frontend *:lb_port, round robin over every API server :6443 with
// HTTPS /healthz checks; no statistics page, the admin socket root's only)
// and keepalived (one VRRP instance, virtual_router_id, priority 100+n for
// the first master down to 101, VIP with the prefix of the subnet the node
// address is on, that interface, PASS authentication with a generated
// secret kept only in the masters' keepalived.conf, optional unicast peers,
// a track script probing HAProxy's frontend: a master whose HAProxy stops
// goes to FAULT and gives the VIP up in about 2 s). Configurations are
// checked by the daemons before they replace the live ones, and reloaded.
// kubeadm init --control-plane-endpoint <VIP>:<lb_port> --upload-certs on
// the first master runs while they are set up (kubeadm needs the VIP only
// once its API server answers; the step fails when the VIP does not come);
// HAProxy's etcd frontend is added once the init is done (it writes the
// certificates the checks use), beside the control-plane joins: masters
// that have not joined are marked down by the checks until they have. The
// other masters join one at a time (concurrent stacked-etcd joins are what
// kubeadm, etcd — one learner at a time — and Cluster API's control plane
// provider avoid), each after etcd reports every member healthy, with the
// certificate key of the certificates kubeadm init --upload-certs uploaded
// (one upload for the hook's joins otherwise; the kubeadm-certs Secret and
// its owner token are deleted after the last join) and a bootstrap token of
// its own, until its Node is Ready and its etcd member started and healthy.
// The checks after a join (nodes, etcd member list and health, one round
// trip, every 250 ms) are the next join's checks before; after a fresh
// init the first join needs none. The workers join through the VIP beside
// them; the VIM is https://<VIP>:<lb_port>.
// etcd is driven with etcdctl on a master (the host's, else the one in the
// etcd static pod through kubectl exec); its member list, health and
// leader are read in one session.
//
// A VNFC heal of masters: ParseParams refuses healing more than (n-1)/2
// masters at once (422) unless additionalParams.force; heal_start
// connects to the masters it can reach, reads etcd's members and health and
// refuses (FAILED_TEMP, nothing changed) when removing the victims' members
// would leave fewer healthy members than a quorum of those left (or of one
// more, while the replacement joins), unless force; moves the VIP off a
// victim that holds it (stops its keepalived) and waits for a survivor to
// take it; takes the victims out of HAProxy on the survivors (reload);
// drains and deletes their Nodes while their etcd members still serve their
// API servers (a victim whose server does not answer at all is deleted
// without a drain: its Node stays Ready for the node monitor's grace period,
// and a drain would wait out drain_timeout); then moves etcd leadership off
// a leading victim and removes the victims' members by id (found by name or
// peer URL, through a healthy master: works with the victim unreachable).
// heal_end joins each replacement as a control-plane node (a key and token of its own), gives it HAProxy and
// keepalived, puts it back into HAProxy on every master (reload), and waits
// until the member list is exactly the masters, all healthy. Scaling the
// masters is refused (scale_start: an aspect scaling the master VDU).
// Worker scale and heal use the first master that answers, through the VIP.
//
// ParseParams (mgmtdrivers.Typed) refuses invalid instantiate parameters, a
// VNFC heal of a single master and a heal of more masters than etcd can lose
// at the API (422), before an operation exists.
//
// Rollback (mgmtdrivers.RollbackHandler): of instantiate_end removes the
// VIM; of a scale-out's scale_end deletes the Node objects of the workers it
// added (the infra rollback removes their VMs).
package kubeadm
