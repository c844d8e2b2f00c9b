package testhosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// Persistent networks (Options.Persist) keep each host like a cloud keeps a
// VM: its disk (the filesystem layers, /home, /root, /tmp) and its identity
// (name, hostname, address, MAC, host keys) stay in the state directory when
// the network closes or the process dies, and Restore boots it again from
// them. Nothing of the first boot is redone: accounts, files written by the
// users and services enabled through systemctl are what they were; the init
// starts the enabled services again, as systemd does at boot.

// identityFile holds a host's identity in its state directory.
const identityFile = "host.json"

type identity struct {
	Name           string     `json:"name"`
	Hostname       string     `json:"hostname"`
	IP             netip.Addr `json:"ip"`
	MAC            string     `json:"mac,omitempty"`
	NoPasswordAuth bool       `json:"no_password_auth,omitempty"`
	NoPeers        bool       `json:"no_peers,omitempty"`
	ExtraHosts     []string   `json:"extra_hosts,omitempty"`
	HostKeys       []savedKey `json:"host_keys"`
}

type savedKey struct {
	File       string `json:"file"`
	Label      string `json:"label"`
	Bits       int    `json:"bits"`
	Comment    string `json:"comment,omitempty"`
	PrivatePEM string `json:"private_pem"`
}

// saveIdentity writes host.json (0600: it holds the private host keys, which
// are on the host's disk anyway).
func (h *Host) saveIdentity() error {
	if !h.net.opts.Persist {
		return nil
	}
	h.mu.Lock()
	id := identity{Name: h.Name, Hostname: h.Hostname, IP: h.IP, MAC: h.spec.MAC, NoPasswordAuth: h.spec.NoPasswordAuth,
		NoPeers: h.spec.NoPeers, ExtraHosts: h.spec.ExtraHosts}
	for _, k := range h.keys {
		id.HostKeys = append(id.HostKeys, savedKey{File: k.File, Label: k.Label, Bits: k.Bits, Comment: k.Comment(), PrivatePEM: string(k.PrivatePEM)})
	}
	h.mu.Unlock()
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(h.dir, identityFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(h.dir, identityFile))
}

func loadIdentity(dir string) (identity, []HostKey, error) {
	var id identity
	b, err := os.ReadFile(filepath.Join(dir, identityFile))
	if err != nil {
		return id, nil, err
	}
	if err := json.Unmarshal(b, &id); err != nil {
		return id, nil, fmt.Errorf("testhosts: %s: %w", filepath.Join(dir, identityFile), err)
	}
	var keys []HostKey
	for _, k := range id.HostKeys {
		hk, err := ParseHostKey(k.File, k.Label, k.Bits, []byte(k.PrivatePEM), k.Comment)
		if err != nil {
			return id, nil, fmt.Errorf("testhosts: host %s: %w", id.Name, err)
		}
		keys = append(keys, hk)
	}
	return id, keys, nil
}

// Saved lists the hosts whose disk and identity are kept in the state
// directory but which are not running in this network (after a restart:
// candidates for Restore, or Forget).
func (n *Network) Saved() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(n.stateDir, "hosts"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || n.Host(e.Name()) != nil {
			continue
		}
		out = append(out, e.Name())
	}
	return out, nil
}

// Restore boots a saved host again with its disk and identity, like a VM
// that is started after its hypervisor restarted. With start false it is
// registered (address taken) but left powered off; Start boots it.
func (n *Network) Restore(ctx context.Context, name string, start bool) (*Host, error) {
	dir := filepath.Join(n.stateDir, "hosts", name)
	id, keys, err := loadIdentity(dir)
	if err != nil {
		return nil, fmt.Errorf("testhosts: restore %s: %w", name, err)
	}
	if id.Name != name {
		return nil, fmt.Errorf("testhosts: restore %s: %s names host %q", name, identityFile, id.Name)
	}
	spec := HostSpec{Name: id.Name, Hostname: id.Hostname, IP: id.IP, MAC: id.MAC, NoPasswordAuth: id.NoPasswordAuth,
		NoPeers: id.NoPeers, ExtraHosts: id.ExtraHosts, HostKeys: keys}
	h, err := n.reserve(&spec)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.keys = keys
	h.mu.Unlock()
	t0 := time.Now()
	err = h.setupNet(ctx)
	if err == nil && start {
		err = h.Start(ctx)
	}
	if err != nil {
		_ = h.shutdown(context.Background())
		n.unregister(h)
		return nil, err
	}
	n.logf("host %s (%s) restored in %v", h.Name, h.IP, time.Since(t0).Round(time.Millisecond))
	return h, nil
}

// Forget deletes a saved host's disk and identity (its server is gone).
func (n *Network) Forget(name string) error {
	if n.Host(name) != nil {
		return fmt.Errorf("testhosts: host %s is running; Remove it", name)
	}
	if !hostNameRE.MatchString(name) {
		return fmt.Errorf("testhosts: invalid host name %q", name)
	}
	return os.RemoveAll(filepath.Join(n.stateDir, "hosts", name))
}

// shutdown powers the host off and takes its network away, keeping its
// state directory (Close of a persistent network).
func (h *Host) shutdown(ctx context.Context) error {
	errs := []error{h.Stop(ctx), killNetns(ctx, h.NetNS)}
	if h.netUp {
		_ = run(ctx, "", "ip", "-n", h.net.ctl, "neigh", "flush", "to", h.IP.String())
	}
	return errors.Join(errs...)
}
