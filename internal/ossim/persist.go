package ossim

// The simulator's storage layer (Options.StateFile): its state is kept in
// one JSON file, written atomically whenever it changed (checked every
// SaveInterval and on Close), and read back by New, so the cloud survives a
// restart of its process — graceful or kill -9 — like a real cloud keeps its
// database: accounts (with their ids), tokens, networks, subnets, ports
// (with their tags), floating IPs, security groups, server groups, servers
// (with their host keys and console logs), stacks (templates, files,
// environment, parameters, resources, events), and — in persist_lb.go —
// routers, Octavia's objects and application credentials (a token keeps
// the access rules of the credential it was issued for). Servers on the
// host-backed network get
// their hosts back through testhosts' persistent networks (Restore), with
// their disks and identities.
//
// After a restart, what was in progress is settled the way OpenStack's
// services settle it when they restart: a stack action IN_PROGRESS becomes
// FAILED ("Engine went down during stack CREATE"), a server still building
// becomes ERROR, an Octavia object pending is ACTIVE (or gone, if it was
// being deleted). Clients (the VNFM's infra driver) retry from there.
//
// The API handlers know nothing of this file: the state is read from the
// same structures they use, under the same lock.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// stateVersion is the format of the state file.
const stateVersion = 1

// stateMutex is the simulator's lock. Every Unlock counts as a possible
// change, so the saver knows when to look at the state again.
type stateMutex struct {
	sync.Mutex
	gen atomic.Uint64
}

func (m *stateMutex) Unlock() {
	m.gen.Add(1)
	m.Mutex.Unlock()
}

type stateFile struct {
	Version   int               `json:"version"`
	Saved     time.Time         `json:"saved"`
	Accounts  []stAccount       `json:"accounts"`
	Tokens    []stToken         `json:"tokens,omitempty"`
	Networks  []stNetwork       `json:"networks"`
	Subnets   []stSubnet        `json:"subnets"`
	Ports     []stPort          `json:"ports,omitempty"`
	FIPs      []stFIP           `json:"floating_ips,omitempty"`
	SecGroups []stSecGroup      `json:"security_groups,omitempty"`
	SrvGroups []stSrvGroup      `json:"server_groups,omitempty"`
	Servers   []stServer        `json:"servers,omitempty"`
	Stacks    []stStack         `json:"stacks,omitempty"`
	SwConfigs map[string]string `json:"software_configs,omitempty"`
	ServerSeq int               `json:"server_seq"`
	Routers   []stRouter        `json:"routers,omitempty"`                 // persist_lb.go
	Octavia   *stOctavia        `json:"octavia,omitempty"`                 // persist_lb.go
	AppCreds  []stAppCred       `json:"application_credentials,omitempty"` // persist_lb.go
}

type stAccount struct {
	UserName, UserID, DomainName, DomainID                     string
	ProjectName, ProjectID, ProjectDomainName, ProjectDomainID string
}

type stToken struct {
	ID, UserID, AuditID, Base, ScopeTok string
	Methods                             []string
	Issued, Expires                     time.Time
	Revoked                             bool
	AppCred                             string       `json:",omitempty"` // the application credential it was issued for
	Rules                               []accessRule `json:",omitempty"` // and its access rules
}

type stNetwork struct {
	ID, Name, Project              string
	Subnets                        []string
	External, Shared, PortSecurity bool
	Created, Updated               time.Time
	Revision, SegID                int
}

type stPool struct{ Start, End netip.Addr }

type stSubnet struct {
	ID, Name, NetworkID, Project string
	CIDR                         netip.Prefix
	Gateway                      netip.Addr
	Pools                        []stPool
	EnableDHCP                   bool
	Created, Updated             time.Time
	Revision                     int
}

type stFixedIP struct {
	SubnetID string
	IP       netip.Addr
}

type stPair struct{ IP, MAC string }

type stPort struct {
	ID, Name, NetworkID, Project, MAC string
	Fixed                             []stFixedIP
	Pairs                             []stPair
	DeviceID, DeviceOwner, Status     string
	SGs                               []string
	PortSecurity                      bool
	VnicType, HostID, Description     string
	Created, Updated                  time.Time
	Revision                          int
	Tags                              []string `json:",omitempty"`
}

type stFIP struct {
	ID, NetworkID, Project string
	Addr                   netip.Addr
	PortID                 string
	FixedIP                netip.Addr
	Description            string
	Created, Updated       time.Time
	Revision               int
}

type stRule struct {
	ID, GroupID, Direction, Ethertype, Protocol string
	PortMin, PortMax                            *int
	RemoteIP, RemoteGroup, Description          string
	Created                                     time.Time
}

type stSecGroup struct {
	ID, Name, Description, Project string
	Rules                          []stRule
	Created, Updated               time.Time
	Revision                       int
}

type stSrvGroup struct {
	ID, Name, Project string
	Policies, Members []string
}

type stKey struct {
	File, Label, Comment string
	Bits                 int
	PrivatePEM           string
}

type stServer struct {
	ID, Name, Project, UserID string
	Status, VMState, Task     string
	Power                     int
	FlavorID                  string
	Image                     string
	Created, Updated, Launch  time.Time
	Metadata                  map[string]string
	UserData                  string
	KeyName, AZ               string
	Ports                     []string
	AutoPorts                 []string
	SecGroups                 []string
	Group                     string
	Hostname                  string
	Keys                      []stKey
	Console                   []string
	Fault                     map[string]any
	// Host names the server's test host ("" when it has none).
	Host string
	Seq  int
}

type stEvent struct {
	ID, ResName, PhysID, Status, Reason string
	At                                  time.Time
}

type stResource struct {
	ID, Name, Type         string
	HasHandler             bool
	Props                  map[string]any
	Action, Status, Reason string
	PhysID                 string
	Created, Updated       time.Time
	Nested                 string // id of the nested stack
	Data                   map[string]any
}

type stStack struct {
	ID, Name, Project, Owner string
	Parent, ParentRes        string
	Template                 map[string]any
	Files                    map[string]string
	Env                      map[string]any
	UserParams               map[string]any
	Action, Status, Reason   string
	Created, Updated         time.Time
	DeletedAt                time.Time
	Deleted                  bool
	DisableRollback          bool
	TimeoutMins              int
	Tags                     []string
	Resources                []stResource
	Gen                      int
	Events                   []stEvent
}

// ---- save ----

// snapshot copies the state (s.mu held).
func (s *Sim) snapshot() *stateFile {
	f := &stateFile{Version: stateVersion, Saved: time.Now().UTC(), SwConfigs: s.swConfigs, ServerSeq: s.serverSeq}
	for _, a := range s.accounts {
		f.Accounts = append(f.Accounts, stAccount{a.UserName, a.UserID, a.DomainName, a.DomainID, a.ProjectName, a.ProjectID, a.ProjectDomainName, a.ProjectDomainID})
	}
	now := time.Now()
	for _, t := range s.tokens {
		if t.expires.Before(now) || t.account == nil {
			continue
		}
		f.Tokens = append(f.Tokens, stToken{ID: t.id, UserID: t.account.UserID, AuditID: t.auditID, Base: t.base, ScopeTok: t.scopeTok,
			Methods: t.methods, Issued: t.issued, Expires: t.expires, Revoked: t.revoked, AppCred: t.appCred, Rules: t.rules})
	}
	for _, n := range s.nets {
		f.Networks = append(f.Networks, stNetwork{n.id, n.name, n.project, n.subnets, n.external, n.shared, n.portSecurity, n.created, n.updated, n.revision, n.segID})
	}
	for _, sn := range s.subnets {
		x := stSubnet{ID: sn.id, Name: sn.name, NetworkID: sn.networkID, Project: sn.project, CIDR: sn.cidr, Gateway: sn.gateway,
			EnableDHCP: sn.enableDHCP, Created: sn.created, Updated: sn.updated, Revision: sn.revision}
		for _, p := range sn.pools {
			x.Pools = append(x.Pools, stPool{p.start, p.end})
		}
		f.Subnets = append(f.Subnets, x)
	}
	for _, p := range s.ports {
		x := stPort{ID: p.id, Name: p.name, NetworkID: p.networkID, Project: p.project, MAC: p.mac, DeviceID: p.deviceID,
			DeviceOwner: p.deviceOwner, Status: p.status, SGs: p.sgs, PortSecurity: p.portSecurity, VnicType: p.vnicType,
			HostID: p.hostID, Description: p.description, Created: p.created, Updated: p.updated, Revision: p.revision, Tags: p.tags}
		for _, fi := range p.fixed {
			x.Fixed = append(x.Fixed, stFixedIP{fi.subnetID, fi.ip})
		}
		for _, pr := range p.pairs {
			x.Pairs = append(x.Pairs, stPair{pr.ip, pr.mac})
		}
		f.Ports = append(f.Ports, x)
	}
	for _, fip := range s.fips {
		f.FIPs = append(f.FIPs, stFIP{fip.id, fip.networkID, fip.project, fip.addr, fip.portID, fip.fixedIP, fip.description, fip.created, fip.updated, fip.revision})
	}
	for _, g := range s.sgroups {
		x := stSecGroup{ID: g.id, Name: g.name, Description: g.description, Project: g.project, Created: g.created, Updated: g.updated, Revision: g.revision}
		for _, r := range g.rules {
			x.Rules = append(x.Rules, stRule{r.id, r.groupID, r.direction, r.ethertype, r.protocol, r.portMin, r.portMax, r.remoteIP, r.remoteGroup, r.description, r.created})
		}
		f.SecGroups = append(f.SecGroups, x)
	}
	for _, g := range s.srvGroups {
		f.SrvGroups = append(f.SrvGroups, stSrvGroup{g.id, g.name, g.project, g.policies, g.members})
	}
	for _, sv := range s.servers {
		x := stServer{ID: sv.id, Name: sv.name, Project: sv.project, UserID: sv.userID, Status: sv.status, VMState: sv.vmState,
			Task: sv.task, Power: sv.power, Image: sv.image, Created: sv.created, Updated: sv.updated, Launch: sv.launch,
			Metadata: sv.metadata, UserData: sv.userData, KeyName: sv.keyName, AZ: sv.az, Ports: sv.ports, SecGroups: sv.secGroups,
			Group: sv.group, Hostname: sv.hostname, Console: sv.console, Fault: sv.fault, Seq: sv.seq}
		if sv.flavor != nil {
			x.FlavorID = sv.flavor.ID
		}
		for id := range sv.autoPorts {
			x.AutoPorts = append(x.AutoPorts, id)
		}
		sort.Strings(x.AutoPorts)
		for _, k := range sv.keys {
			x.Keys = append(x.Keys, stKey{File: k.File, Label: k.Label, Comment: k.Comment(), Bits: k.Bits, PrivatePEM: string(k.PrivatePEM)})
		}
		if sv.host != nil {
			x.Host = sv.host.Name
		} else if p, _ := s.hostPort(sv); p != nil && s.opts.Hosts != nil && sv.status != "BUILD" {
			x.Host = hostKey(sv) // powered off or not yet attached: the name is derived
		}
		f.Servers = append(f.Servers, x)
	}
	for _, st := range s.stacks {
		if st.deleted && now.Sub(st.deletedAt) > time.Hour {
			continue // Heat purges deleted stacks too
		}
		x := stStack{ID: st.id, Name: st.name, Project: st.project, Owner: st.owner, ParentRes: st.parentRes, Files: st.files,
			Env: st.env, UserParams: st.userParams, Action: st.action, Status: st.status, Reason: st.reason, Created: st.created,
			Updated: st.updated, DeletedAt: st.deletedAt, Deleted: st.deleted, DisableRollback: st.disableRollback,
			TimeoutMins: st.timeoutMins, Tags: st.tags, Gen: st.gen}
		if st.parent != nil {
			x.Parent = st.parent.id
		}
		if st.tmpl != nil {
			x.Template = st.tmpl.raw
		}
		for _, r := range st.res {
			y := stResource{ID: r.id, Name: r.name, Type: r.typ, HasHandler: r.handler != nil, Props: r.props, Action: r.action,
				Status: r.status, Reason: r.reason, PhysID: r.physID, Created: r.created, Updated: r.updated, Data: r.data}
			if r.nested != nil {
				y.Nested = r.nested.id
			}
			x.Resources = append(x.Resources, y)
		}
		sort.Slice(x.Resources, func(i, j int) bool { return x.Resources[i].Name < x.Resources[j].Name })
		for _, e := range st.events {
			x.Events = append(x.Events, stEvent{e.id, e.resName, e.physID, e.status, e.reason, e.at})
		}
		f.Stacks = append(f.Stacks, x)
	}
	// A stable order, so an unchanged state gives the same bytes.
	sort.Slice(f.Tokens, func(i, j int) bool { return f.Tokens[i].ID < f.Tokens[j].ID })
	sort.Slice(f.Networks, func(i, j int) bool { return f.Networks[i].ID < f.Networks[j].ID })
	sort.Slice(f.Subnets, func(i, j int) bool { return f.Subnets[i].ID < f.Subnets[j].ID })
	sort.Slice(f.Ports, func(i, j int) bool { return f.Ports[i].ID < f.Ports[j].ID })
	sort.Slice(f.FIPs, func(i, j int) bool { return f.FIPs[i].ID < f.FIPs[j].ID })
	sort.Slice(f.SecGroups, func(i, j int) bool { return f.SecGroups[i].ID < f.SecGroups[j].ID })
	sort.Slice(f.SrvGroups, func(i, j int) bool { return f.SrvGroups[i].ID < f.SrvGroups[j].ID })
	sort.Slice(f.Servers, func(i, j int) bool { return f.Servers[i].ID < f.Servers[j].ID })
	sort.Slice(f.Stacks, func(i, j int) bool { return f.Stacks[i].ID < f.Stacks[j].ID })
	s.snapshotLB(f)
	return f
}

// saver writes the state file when the state changed.
type saver struct {
	path    string
	lastGen uint64
	last    []byte
}

// save writes the state if it changed since the last save. The JSON is made
// under the lock (the maps it copies are shared with the handlers) and
// written outside it.
func (s *Sim) save() error {
	sv := s.saver
	gen := s.mu.gen.Load()
	if gen == sv.lastGen && sv.last != nil {
		return nil
	}
	s.mu.Mutex.Lock() // not Unlock-counted: reading is no change
	f := s.snapshot()
	b, err := json.Marshal(f)
	s.mu.Mutex.Unlock()
	if err != nil {
		return fmt.Errorf("ossim: state: %w", err)
	}
	sv.lastGen = gen
	// Only the time of saving differs between two identical states.
	if sameState(b, sv.last) {
		return nil
	}
	if err := writeFileAtomic(sv.path, b); err != nil {
		return fmt.Errorf("ossim: saving the state to %s: %w", sv.path, err)
	}
	sv.last = b
	return nil
}

// sameState compares two state files but for their "saved" time.
func sameState(a, b []byte) bool {
	if b == nil {
		return false
	}
	strip := func(x []byte) string {
		s := string(x)
		if i := strings.Index(s, `"saved":"`); i >= 0 {
			if j := strings.Index(s[i+9:], `"`); j >= 0 {
				return s[:i] + s[i+9+j+1:]
			}
		}
		return s
	}
	return strip(a) == strip(b)
}

func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600) // user_data and host keys
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// saveLoop saves every interval until the simulator closes.
func (s *Sim) saveLoop(every time.Duration) {
	defer s.saveWG.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if err := s.save(); err != nil {
				s.logf("%v", err)
			}
		}
	}
}

// ---- load ----

func loadStateFile(path string) (*stateFile, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("ossim: state file %s: %w (move it away to start with an empty cloud)", path, err)
	}
	if f.Version != stateVersion {
		return nil, fmt.Errorf("ossim: state file %s has version %d, this simulator reads %d (move it away to start with an empty cloud)", path, f.Version, stateVersion)
	}
	return &f, nil
}

// restoreState rebuilds the state from a file (in New, before anything
// serves). Accounts keep the ids they had; their passwords come from Options.
func (s *Sim) restoreState(f *stateFile) error {
	byUser := map[string]*Account{}
	for _, a := range s.accounts {
		for _, sa := range f.Accounts {
			if sa.UserName == a.UserName && sa.ProjectName == a.ProjectName && sa.DomainName == a.DomainName {
				a.UserID, a.DomainID, a.ProjectID, a.ProjectDomainID = sa.UserID, sa.DomainID, sa.ProjectID, sa.ProjectDomainID
			}
		}
		byUser[a.UserID] = a
	}
	for _, t := range f.Tokens {
		if a := byUser[t.UserID]; a != nil {
			s.tokens[t.ID] = &token{id: t.ID, account: a, methods: t.Methods, issued: t.Issued, expires: t.Expires,
				auditID: t.AuditID, base: t.Base, revoked: t.Revoked, scopeTok: t.ScopeTok, appCred: t.AppCred, rules: t.Rules}
		}
	}
	for _, n := range f.Networks {
		s.nets[n.ID] = &network{id: n.ID, name: n.Name, project: n.Project, subnets: n.Subnets, external: n.External, shared: n.Shared,
			portSecurity: n.PortSecurity, created: n.Created, updated: n.Updated, revision: n.Revision, segID: n.SegID}
	}
	for _, x := range f.Subnets {
		sn := &subnet{id: x.ID, name: x.Name, networkID: x.NetworkID, project: x.Project, cidr: x.CIDR, gateway: x.Gateway,
			enableDHCP: x.EnableDHCP, created: x.Created, updated: x.Updated, revision: x.Revision}
		for _, p := range x.Pools {
			sn.pools = append(sn.pools, ipPool{p.Start, p.End})
		}
		s.subnets[x.ID] = sn
	}
	for _, x := range f.Ports {
		p := &port{id: x.ID, name: x.Name, networkID: x.NetworkID, project: x.Project, mac: x.MAC, deviceID: x.DeviceID,
			deviceOwner: x.DeviceOwner, status: x.Status, sgs: x.SGs, portSecurity: x.PortSecurity, vnicType: x.VnicType,
			hostID: x.HostID, description: x.Description, created: x.Created, updated: x.Updated, revision: x.Revision, tags: x.Tags}
		for _, fi := range x.Fixed {
			p.fixed = append(p.fixed, fixedIP{fi.SubnetID, fi.IP})
		}
		for _, pr := range x.Pairs {
			p.pairs = append(p.pairs, addrPair{pr.IP, pr.MAC})
		}
		s.ports[x.ID] = p
	}
	for _, x := range f.FIPs {
		s.fips[x.ID] = &floatingIP{id: x.ID, networkID: x.NetworkID, project: x.Project, addr: x.Addr, portID: x.PortID,
			fixedIP: x.FixedIP, description: x.Description, created: x.Created, updated: x.Updated, revision: x.Revision}
	}
	for _, x := range f.SecGroups {
		g := &secGroup{id: x.ID, name: x.Name, description: x.Description, project: x.Project, created: x.Created, updated: x.Updated, revision: x.Revision}
		for _, r := range x.Rules {
			g.rules = append(g.rules, &sgRule{id: r.ID, groupID: r.GroupID, direction: r.Direction, ethertype: r.Ethertype, protocol: r.Protocol,
				portMin: r.PortMin, portMax: r.PortMax, remoteIP: r.RemoteIP, remoteGroup: r.RemoteGroup, description: r.Description, created: r.Created})
		}
		s.sgroups[x.ID] = g
	}
	for _, x := range f.SrvGroups {
		s.srvGroups[x.ID] = &serverGroup{id: x.ID, name: x.Name, project: x.Project, policies: x.Policies, members: x.Members}
	}
	for _, x := range f.Servers {
		sv := &server{id: x.ID, name: x.Name, project: x.Project, userID: x.UserID, status: x.Status, vmState: x.VMState, task: x.Task,
			power: x.Power, flavor: s.findFlavor(x.FlavorID), image: x.Image, created: x.Created, updated: x.Updated, launch: x.Launch,
			metadata: x.Metadata, userData: x.UserData, keyName: x.KeyName, az: x.AZ, ports: x.Ports, autoPorts: map[string]bool{},
			secGroups: x.SecGroups, group: x.Group, hostname: x.Hostname, console: x.Console, fault: x.Fault, seq: x.Seq}
		if sv.metadata == nil {
			sv.metadata = map[string]string{}
		}
		for _, id := range x.AutoPorts {
			sv.autoPorts[id] = true
		}
		for _, k := range x.Keys {
			hk, err := testhosts.ParseHostKey(k.File, k.Label, k.Bits, []byte(k.PrivatePEM), k.Comment)
			if err != nil {
				return fmt.Errorf("ossim: server %s: %w", x.Name, err)
			}
			sv.keys = append(sv.keys, hk)
		}
		if sv.userData != "" || sv.status != "BUILD" {
			sv.cc = parseUserData(sv.userData, s.opts.ServerUser, s.opts.ServerPassword)
		}
		// Nova settles what was in progress when it went down.
		switch sv.status {
		case "BUILD", "REBUILD":
			sv.status, sv.vmState, sv.power = "ERROR", "error", 0
			sv.fault = map[string]any{"code": 500, "created": novaTime(s.now()),
				"message": "Instance failed to spawn: the compute service restarted during " + strings.ToLower(x.Status)}
		case "REBOOT":
			sv.status, sv.vmState, sv.power = "ACTIVE", "active", 1
		}
		sv.task = ""
		s.servers[x.ID] = sv
		if x.Seq > s.serverSeq {
			s.serverSeq = x.Seq
		}
	}
	if f.ServerSeq > s.serverSeq {
		s.serverSeq = f.ServerSeq
	}
	if f.SwConfigs != nil {
		s.swConfigs = f.SwConfigs
	}
	s.restoreLB(f)
	return s.restoreStacks(f.Stacks)
}

func (s *Sim) restoreStacks(list []stStack) error {
	for _, x := range list {
		st := &stack{id: x.ID, name: x.Name, project: x.Project, owner: x.Owner, parentRes: x.ParentRes, files: x.Files, env: x.Env,
			userParams: x.UserParams, action: x.Action, status: x.Status, reason: x.Reason, created: x.Created, updated: x.Updated,
			deletedAt: x.DeletedAt, deleted: x.Deleted, disableRollback: x.DisableRollback, timeoutMins: x.TimeoutMins, tags: x.Tags,
			res: map[string]*resource{}, gen: x.Gen}
		if st.files == nil {
			st.files = map[string]string{}
		}
		if st.env == nil {
			st.env = map[string]any{}
		}
		if x.Template != nil {
			t, err := parseTemplate(x.Template)
			if err != nil {
				return fmt.Errorf("ossim: stack %s: template: %w", x.Name, err)
			}
			st.tmpl = t
		}
		for _, e := range x.Events {
			st.events = append(st.events, &event{id: e.ID, resName: e.ResName, physID: e.PhysID, status: e.Status, reason: e.Reason, at: e.At})
		}
		s.stacks[x.ID] = st
	}
	for _, x := range list {
		st := s.stacks[x.ID]
		st.parent = s.stacks[x.Parent]
		if st.tmpl != nil {
			if p, err := computeParams(st.tmpl, st.userParams, st.env, st.parent != nil); err == nil {
				st.params = p
			} else {
				st.params = st.userParams
			}
		}
		for _, y := range x.Resources {
			r := &resource{st: st, id: y.ID, name: y.Name, typ: y.Type, props: y.Props, action: y.Action, status: y.Status,
				reason: y.Reason, physID: y.PhysID, created: y.Created, updated: y.Updated, nested: s.stacks[y.Nested], data: y.Data}
			if r.data == nil {
				r.data = map[string]any{}
			}
			if y.HasHandler {
				h, err := s.resolveType(st, y.Type)
				if err != nil {
					return fmt.Errorf("ossim: stack %s resource %s: %w", x.Name, y.Name, err)
				}
				r.handler = h
			}
			st.res[y.Name] = r
		}
	}
	// Heat settles what was in progress when its engine went down.
	for _, st := range s.stacks {
		if strings.HasSuffix(st.status, "IN_PROGRESS") {
			st.status, st.reason = "FAILED", "Engine went down during stack "+st.action
			st.updated = s.now()
		}
		for _, r := range st.res {
			if strings.HasSuffix(r.status, "IN_PROGRESS") {
				s.setResState(r, r.action, "FAILED", "Engine went down during resource "+r.action)
			}
		}
	}
	return nil
}

// restoreHosts boots again the hosts of the servers that had one, and
// forgets the saved hosts no server owns (a server deleted, or one whose
// build was cut short, just before the process ended).
func (s *Sim) restoreHosts(ctx context.Context, f *stateFile) {
	if s.opts.Hosts == nil {
		return
	}
	owned := map[string]bool{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, x := range f.Servers {
		sv := s.servers[x.ID]
		if x.Host == "" || sv == nil || sv.status == "ERROR" && x.Status != "ERROR" {
			continue
		}
		owned[x.Host] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			running := sv.status != "SHUTOFF"
			h, err := s.opts.Hosts.Restore(ctx, x.Host, running)
			s.mu.Lock()
			defer s.mu.Unlock()
			if err != nil {
				now := s.now()
				sv.status, sv.vmState, sv.power, sv.updated = "ERROR", "error", 0, now
				sv.fault = map[string]any{"code": 500, "created": novaTime(now), "message": "the server's host could not be booted again: " + err.Error()}
				s.logf("nova: server %s (%s) ERROR: host not restored: %v", sv.name, sv.id, err)
				return
			}
			sv.host = h
			s.logf("nova: server %s (%s) %s again as test host %s", sv.name, sv.id, sv.status, h.Name)
		}()
	}
	wg.Wait()
	saved, err := s.opts.Hosts.Saved()
	if err != nil {
		s.logf("ossim: listing saved hosts: %v", err)
		return
	}
	for _, name := range saved {
		if !owned[name] {
			if err := s.opts.Hosts.Forget(name); err != nil {
				s.logf("ossim: forgetting host %s: %v", name, err)
			}
		}
	}
}
