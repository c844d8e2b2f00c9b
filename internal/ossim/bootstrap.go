package ossim

import (
	"context"
	"fmt"
	"time"
)

// ServerSpec is a server the cloud's operator creates for everybody's use
// (EnsureServer), e.g. the embedded cloud's Ansible server.
type ServerSpec struct {
	Name string
	// Network is the network's name (default: the host-backed network).
	Network string
	// FixedIP is the server's address on it (default: the next free one).
	FixedIP  string
	Flavor   string // default m1.small
	Image    string // default ubuntu-22.04-server-cloudimg-amd64
	UserData string // cloud-config or a script, as Nova takes it (not base64)
	Metadata map[string]string
}

// EnsureServer creates the server in the first account's project unless one
// with that name exists, and waits until it is ACTIVE. A server of that name
// in ERROR is deleted and created again.
func (s *Sim) EnsureServer(ctx context.Context, spec ServerSpec) (ServerInfo, error) {
	if spec.Flavor == "" {
		spec.Flavor = "m1.small"
	}
	if spec.Image == "" {
		spec.Image = "ubuntu-22.04-server-cloudimg-amd64"
	}
	s.mu.Lock()
	var sv *server
	for _, x := range s.servers {
		if x.name == spec.Name && !x.deleting {
			sv = x
		}
	}
	if sv != nil && sv.status == "ERROR" {
		id := sv.id
		s.mu.Unlock()
		if err := s.deleteServer(ctx, id); err != nil {
			return ServerInfo{}, err
		}
		s.mu.Lock()
		sv = nil
	}
	if sv == nil {
		acct := s.accounts[0]
		net := s.hostNet
		if spec.Network != "" {
			net = nil
			for _, n := range s.nets {
				if n.name == spec.Network {
					net = n
				}
			}
		}
		if net == nil {
			s.mu.Unlock()
			return ServerInfo{}, fmt.Errorf("ossim: no network %q for server %s", spec.Network, spec.Name)
		}
		var err error
		sv, err = s.createServer(acct.ProjectID, acct.UserID, serverRequest{Name: spec.Name, Flavor: spec.Flavor, Image: spec.Image,
			UserData: spec.UserData, Metadata: spec.Metadata, Networks: []serverNet{{NetworkID: net.id, FixedIP: spec.FixedIP}}})
		if err != nil {
			s.mu.Unlock()
			return ServerInfo{}, fmt.Errorf("ossim: server %s: %w", spec.Name, err)
		}
		s.mu.Unlock()
		if err := s.bootServer(ctx, sv, ""); err != nil {
			return ServerInfo{}, fmt.Errorf("ossim: server %s: %w", spec.Name, err)
		}
		s.mu.Lock()
	}
	id := sv.id
	s.mu.Unlock()
	// A server that already existed may still be booting.
	for {
		s.mu.Lock()
		sv = s.servers[id]
		var si ServerInfo
		status := ""
		if sv != nil {
			si, status = s.serverInfo(sv), sv.status
		}
		fault := ""
		if sv != nil && sv.fault != nil {
			fault = fmt.Sprint(sv.fault["message"])
		}
		s.mu.Unlock()
		switch status {
		case "ACTIVE":
			return si, nil
		case "", "ERROR", "DELETED":
			return si, fmt.Errorf("ossim: server %s is %q: %s", spec.Name, status, fault)
		}
		select {
		case <-ctx.Done():
			return si, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// NetworkID returns the id of the network with that name ("" if none).
func (s *Sim) NetworkID(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.nets {
		if n.name == name {
			return n.id
		}
	}
	return ""
}
