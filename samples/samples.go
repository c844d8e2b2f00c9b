// Package samples embeds the sample VNF package trees, so the VNFM can
// onboard them by itself when it brings its own cloud (make run) and tests
// can build them without a checkout path.
package samples

import (
	"embed"
	"io/fs"
)

//go:embed kubeadm-single kubeadm-ha kubeadm-ha-lb kubespray kubeadm-kuryr kubeadm-tosca cnf-helloworld
var trees embed.FS

// Names lists the sample packages that build a Kubernetes cluster (VNF-A).
var Names = []string{"kubeadm-single", "kubeadm-ha", "kubeadm-ha-lb", "kubespray", "kubeadm-kuryr", "kubeadm-tosca"}

// CNFNames lists the sample CNF packages (VNF-B), deployed on the
// Kubernetes VIM a cluster sample registers.
var CNFNames = []string{"cnf-helloworld"}

// Tree returns the source tree of one sample package.
func Tree(name string) (fs.FS, error) { return fs.Sub(trees, name) }
