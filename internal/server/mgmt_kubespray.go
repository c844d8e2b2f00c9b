package server

import (
	"context"
	"net"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kubespray"
)

// NewKubesprayDriver returns the kubespray management driver (name
// "kubespray"; VNFDs bind it as mgmt-drivers-kubespray or builtin:kubespray).
// pins is the store's HostKeyPins() (required); dial reaches the VNFCs, the
// Ansible server and the load balancer's API frontend (nil: the host's
// network). Register it next to the other built-in drivers:
//
//	mgmtdrivers.NewRegistry(..., NewKubesprayDriver(st.HostKeyPins(), nil).Driver())
func NewKubesprayDriver(pins remote.PinStore, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *kubespray.Driver {
	return kubespray.New(kubespray.Options{Pins: pins, Dial: dial})
}
