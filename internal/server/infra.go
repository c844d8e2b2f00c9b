package server

import (
	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/openstack"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/vims"
)

// NewInfraResolver returns the resolver of the built-in infra drivers: the
// OpenStack (Heat) driver for OpenStack VIMs — vimType
// ETSINFV.OPENSTACK_KEYSTONE.V_3, or Tacker's "openstack" — the Kubernetes
// driver for Kubernetes VIMs (CNFs) — ETSINFV.KUBERNETES.V_1, or Tacker's
// "kubernetes" — and next for any other VIM type (nil: none). os or k8s nil
// means that driver with the default options. Use it as Options.Infra.
func NewInfraResolver(os *openstack.Driver, k8s *kubernetes.Driver, next lcm.InfraResolver) lcm.InfraResolver {
	if os == nil {
		os = openstack.New(openstack.Options{})
	}
	if k8s == nil {
		k8s = kubernetes.New(kubernetes.Options{})
	}
	return func(vimType string) (driverapi.InfraDriver, bool) {
		switch t := vims.NormalizeVimType(vimType); {
		case vimType == "":
		case t == vims.VimTypeOpenStack:
			return os, true
		case t == vims.VimTypeKubernetes:
			return k8s, true
		}
		if next != nil {
			return next(vimType)
		}
		return nil, false
	}
}
