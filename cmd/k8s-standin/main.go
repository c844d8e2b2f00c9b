// Command k8s-standin is a test stand-in for Kubernetes: one static binary
// that acts as kubeadm, kubectl, kubelet and kube-apiserver depending on the
// name it is called by (install it with symlinks /usr/bin/kubeadm etc.; see
// internal/k8sstandin).
package main

import (
	"os"

	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
)

func main() { os.Exit(k8sstandin.Run()) }
