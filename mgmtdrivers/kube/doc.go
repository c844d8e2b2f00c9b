// Package kube is what the Kubernetes management drivers (kubeadm,
// kubespray) share, so that they agree: the SSH sessions to the nodes
// (host keys pinned, a session that could not start a command reconnects
// once), and — built on the VIM-neutral view of the VNF's compute resources
// that driverapi gives — which VNFCs are nodes and how to reach them.
//
// It is a library, not a driver: it imports driverapi, remote and model,
// never a driver or an infra package.
package kube
