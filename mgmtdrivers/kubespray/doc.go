// Package kubespray is the kubespray management driver (registry name
// "kubespray"; Tacker's artifact key mgmt-drivers-kubespray binds it): it
// builds and manages a Kubernetes cluster on a VNF's VMs by running the
// operator's own kubespray playbooks on their Ansible server over SSH, and
// puts an external HAProxy load balancer VNFC in front of it.
//
// # Parameters
//
// additionalParams.k8s_cluster_installation_param, as Tacker's driver and
// the spec "MgmtDriver with Kubernetes cluster management OSS" name them:
// Params, parsed once when the request is accepted (ParseParams,
// mgmtdrivers.Typed: 422 listing every problem with its JSON path; the
// connection point names checked against the VNFD, external_lb_param's
// script against the package) and handed to every hook typed. The node
// parameters, logins, proxy and CIDRs are mgmtdrivers/kube's, shared with
// kubeadm (one CIDR rule: host bits set are refused, naming the network).
// Keys Tacker's kubeadm takes that kubespray has no use for (script_path,
// master_node.cluster_cp_name, cluster_fip_name) are refused, not ignored:
//
//	vim_name                 Kubernetes VIM name (default kubernetes_vim_<vnfInstanceId>)
//	master_node, worker_node which VNFCs (vdu_id, else aspect_id = the scaling
//	                         group, else every VNFC with ssh_cp_name), ssh_cp_name
//	                         (login address; when no CP is named so — Tacker names
//	                         the floating IP there — the floating IP of nic_cp_name),
//	                         nic_cp_name (node address, default ssh_cp_name),
//	                         username, password and/or ssh_private_key (or
//	                         private_key; + ssh_private_key_passphrase);
//	                         master_node.pod_cidr, cluster_cidr
//	proxy                    http_proxy, https_proxy (its own value: Tacker copies
//	                         http_proxy into it), no_proxy and k8s_node_cidr
//	                         (both in kubespray's additional_no_proxy)
//	ansible                  ip_address, port, username, password and/or private_key,
//	                         host_key_fingerprints (else pinned at first contact),
//	                         kubespray_root_path, transferring_inventory_path,
//	                         playbook_timeout (seconds)
//	external_lb_param        ssh_cp_name, ssh_username, ssh_password and/or
//	                         ssh_private_key, script_path (in the package),
//	                         api_port (8383), nodeport_range (30000-32767 | none)
//
// Private keys go in keys the VNFM recognises as secret (private_key,
// ssh_private_key): they are sealed at rest and masked in output. A scale or
// heal request may replace whole objects (worker_node, ansible, ...).
//
// # Operations
//
// instantiate_end: log in to every node (host key pinned, see below) and
// authorise the cluster's own Ansible key; write the inventory; configure
// the load balancer (external_lb_param.script_path as root: API frontend
// *:8383 -> masters :6443, NodePort frontend -> workers); run
// `ansible-playbook -i <inv>/hosts.ini --become --become-user=root
// cluster.yml`; create a service-account token (cluster-admin) on a master,
// check the API through the load balancer with it and the cluster CA, and
// register the Kubernetes VIM with auth_url https://<LB>:8383, the token
// and the CA certificate (Tacker drops the CA). The load balancer comes
// before cluster.yml because the inventory names it loadbalancer_apiserver:
// the control-plane endpoint and the API certificate are then the load
// balancer's address, which is what makes a CA-verified VIM possible.
//
// scale_start (SCALE_IN): the victims (Op.Victims, the ones the infra driver
// chose and removes next) lose their load balancer routes, are drained
// (bounded; a PodDisruptionBudget that blocks fails the operation, retry
// after fixing it), removed with `remove-node.yml -e node=<names> -e
// skip_confirmation=yes` (plus reset_nodes=false when they do not answer),
// and leave the inventory. scale_end (SCALE_OUT): the added workers are
// prepared and written into the inventory, then `facts.yml` and `scale.yml
// --limit <names>` run and their routes are added. heal of worker VNFCs =
// that scale-in removal in heal_start and that scale-out join in heal_end
// (same node name: nodes are named after their VNFC id, which a heal keeps);
// heal of the whole VNF = terminate_end in heal_start, instantiate_end in
// heal_end; heal of a control-plane VNFC, a scale of an aspect that scales
// the control plane or the load balancer, and a terminate or entire heal
// whose VIM other instances refer to are refused when the request is
// accepted (kubespray has no playbook to add or replace a control-plane
// member; nothing has changed then). terminate_end deletes the VIM and the cluster's
// inventory directory. Rollback of a failed instantiation removes the VIM
// and inventory; of a failed scale-out, the added workers from the cluster.
//
// Every hook is resumable: units (node preparation, LB, each playbook, each
// drain, the VIM) are journaled per node with driverapi.Progress and
// skipped on retry when they completed; playbooks are idempotent anyway.
//
// # Inventory
//
// Each cluster has its own directory <transferring_inventory_path>/<vnfInstanceId>
// on the Ansible server (Tacker's fixed /tmp paths clobber each other, and
// its "path exists" check breaks retries): hosts.ini in the seed's INI layout
// ([all] with ansible_host, ip, etcd_member_name; kube_control_plane, etcd,
// kube_node, calico_rr, k8s_cluster:children), known_hosts,
// group_vars/{all,k8s_cluster}/mini-vnfm.yml (proxies, load balancer, CIDRs;
// kubespray's inventory/sample/group_vars are copied in once), and
// ssh/id_ed25519, the cluster's Ansible key. Nodes are named after their
// VNFC id in lower case (Tacker's master<last octet> collides across /16s).
//
// # Security
//
//   - SSH to the Ansible server, the nodes and the load balancer verifies host
//     keys: pinned at first contact (remote.PinStore), or checked against the
//     fingerprints the cloud published; a heal pins the new server's key.
//   - Ansible checks host keys too, against the inventory's own known_hosts
//     written from the driver's verified pins (ANSIBLE_HOST_KEY_CHECKING=True
//     and ANSIBLE_SSH_ARGS override a kubespray ansible.cfg that turns
//     checking off); the server's ~/.ssh/known_hosts is never touched. Each
//     run has its own ControlPath directory, so no multiplexed connection to
//     a replaced VM is reused.
//   - No password reaches the inventory: Ansible logs in with the cluster's
//     key; sudo passwords (when sudo needs one) travel on stdin into a
//     0600 extra-vars file that the run removes however it ends.
//   - Every value in a command line is quoted; passwords and tokens are
//     masked in logs, errors and progress.
//
// Kubectl is a small kubectl-over-SSH helper (node existence, bounded drain,
// delete, service-account token) that does not depend on kubespray.
package kubespray
