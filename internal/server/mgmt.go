package server

import (
	"context"
	"net"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kubeadm"
)

// The store keeps the SSH host key pins of every driver.
var _ remote.PinStore = (*store.HostKeyPins)(nil)

// MgmtOptions is what the built-in management drivers need from the server.
type MgmtOptions struct {
	// Pins keeps the SSH host keys of the VNFs' nodes: the store's
	// HostKeyPins(). Required.
	Pins remote.PinStore
	// Dial opens the drivers' TCP connections to the nodes (SSH, the new
	// cluster's API server); nil: the host's network. Tests reach hosts
	// in network namespaces through it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DefaultMgmt returns the registry of the built-in management drivers
// (kubeadm, kubespray). Use it as Options.Mgmt, or in Run once the store is open:
//
//	mgmt = DefaultMgmt(MgmtOptions{Pins: st.HostKeyPins()})
func DefaultMgmt(o MgmtOptions) *mgmtdrivers.Registry {
	return mgmtdrivers.NewRegistry(
		kubeadm.New(kubeadm.Options{Pins: o.Pins, Dial: o.Dial}).Driver(),
		NewKubesprayDriver(o.Pins, o.Dial).Driver(),
	)
}
