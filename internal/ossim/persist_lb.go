package ossim

import (
	"net/netip"
	"sort"
	"time"
)

// The state file's part for routers (router.go), Octavia (octavia.go) and
// application credentials (keystone_appcred.go), kept like the rest
// (persist.go): exported mirrors of the records, a stable order, and what
// was in progress settled on restore (an Octavia object pending when the
// simulator stopped is ACTIVE, or gone if it was being deleted).

type stRouter struct {
	ID, Name, Project, Description string
	AdminUp                        bool
	GwNetwork, GwPort              string
	EnableSNAT                     bool
	Created, Updated               time.Time
	Revision                       int
}

type stLBCommon struct {
	ID, Name, Description, Project string
	AdminUp                        bool
	Prov, Op                       string
	Created, Updated               time.Time
	Tags                           []string `json:",omitempty"`
}

type stLB struct {
	stLBCommon
	VipSubnet, VipNetwork, VipPort string
	VipAddr                        netip.Addr
	Provider, FlavorID, AZ         string
}

type stListener struct {
	stLBCommon
	LBID, Protocol, DefaultPool string
	Port, ConnLimit             int
	AllowedCIDRs                []string `json:",omitempty"`
}

type stLBPool struct {
	stLBCommon
	LBID, ListenerID, Protocol, Algorithm, MonitorID string
	Persistence                                      map[string]any `json:",omitempty"`
	Members                                          []string       `json:",omitempty"`
}

type stMember struct {
	stLBCommon
	PoolID, SubnetID, MonitorAddr string
	Address                       netip.Addr
	Port, Weight, MonitorPort     int
	Backup                        bool
}

type stMonitor struct {
	stLBCommon
	PoolID, Type                       string
	Delay, Timeout                     int
	MaxRetries, MaxRetriesDown         int
	HTTPMethod, URLPath, ExpectedCodes string
}

type stOctavia struct {
	LBs       []stLB       `json:"load_balancers,omitempty"`
	Listeners []stListener `json:"listeners,omitempty"`
	Pools     []stLBPool   `json:"pools,omitempty"`
	Members   []stMember   `json:"members,omitempty"`
	Monitors  []stMonitor  `json:"health_monitors,omitempty"`
}

type stAppCred struct {
	ID, Name, Description, Secret string
	UserID, ProjectID             string
	Roles                         []string
	Expires                       time.Time
	Unrestricted                  bool
	Rules                         []accessRule `json:",omitempty"`
}

func lbCommonOut(c lbCommon) stLBCommon {
	return stLBCommon{c.id, c.name, c.description, c.project, c.adminUp, c.prov, c.op, c.created, c.updated, c.tags}
}

func lbCommonIn(x stLBCommon) lbCommon {
	return lbCommon{x.ID, x.Name, x.Description, x.Project, x.AdminUp, x.Prov, x.Op, x.Created, x.Updated, x.Tags}
}

// snapshotLB adds routers, Octavia and application credentials to f.
func (s *Sim) snapshotLB(f *stateFile) {
	for _, r := range s.routers {
		f.Routers = append(f.Routers, stRouter{r.id, r.name, r.project, r.description, r.adminUp, r.gwNetwork, r.gwPort, r.enableSNAT,
			r.created, r.updated, r.revision})
	}
	sort.Slice(f.Routers, func(i, j int) bool { return f.Routers[i].ID < f.Routers[j].ID })
	if o := s.octavia; o != nil {
		x := &stOctavia{}
		for _, lb := range o.lbs {
			x.LBs = append(x.LBs, stLB{lbCommonOut(lb.lbCommon), lb.vipSubnet, lb.vipNetwork, lb.vipPort, lb.vipAddr, lb.provider, lb.flavorID, lb.az})
		}
		for _, l := range o.listeners {
			x.Listeners = append(x.Listeners, stListener{lbCommonOut(l.lbCommon), l.lbID, l.protocol, l.defaultPool, l.port, l.connLimit, l.allowedCIDRs})
		}
		for _, p := range o.pools {
			x.Pools = append(x.Pools, stLBPool{lbCommonOut(p.lbCommon), p.lbID, p.listenerID, p.protocol, p.algorithm, p.monitorID, p.persistence, p.members})
		}
		for _, m := range o.members {
			x.Members = append(x.Members, stMember{lbCommonOut(m.lbCommon), m.poolID, m.subnetID, m.monitorAddr, m.address, m.port, m.weight,
				m.monitorPort, m.backup})
		}
		for _, hm := range o.monitors {
			x.Monitors = append(x.Monitors, stMonitor{lbCommonOut(hm.lbCommon), hm.poolID, hm.typ, hm.delay, hm.timeout, hm.maxRetries,
				hm.maxRetriesDown, hm.httpMethod, hm.urlPath, hm.codes})
		}
		sort.Slice(x.LBs, func(i, j int) bool { return x.LBs[i].ID < x.LBs[j].ID })
		sort.Slice(x.Listeners, func(i, j int) bool { return x.Listeners[i].ID < x.Listeners[j].ID })
		sort.Slice(x.Pools, func(i, j int) bool { return x.Pools[i].ID < x.Pools[j].ID })
		sort.Slice(x.Members, func(i, j int) bool { return x.Members[i].ID < x.Members[j].ID })
		sort.Slice(x.Monitors, func(i, j int) bool { return x.Monitors[i].ID < x.Monitors[j].ID })
		if len(x.LBs)+len(x.Listeners)+len(x.Pools)+len(x.Members)+len(x.Monitors) > 0 {
			f.Octavia = x
		}
	}
	for _, c := range s.appCreds {
		f.AppCreds = append(f.AppCreds, stAppCred{c.id, c.name, c.description, c.secret, c.userID, c.projectID, c.roles, c.expires,
			c.unrestricted, c.rules})
	}
	sort.Slice(f.AppCreds, func(i, j int) bool { return f.AppCreds[i].ID < f.AppCreds[j].ID })
}

// restoreLB is restoreState's part for routers, Octavia and application
// credentials.
func (s *Sim) restoreLB(f *stateFile) {
	for _, x := range f.Routers {
		s.routerTable()[x.ID] = &router{x.ID, x.Name, x.Project, x.Description, x.AdminUp, x.GwNetwork, x.GwPort, x.EnableSNAT,
			x.Created, x.Updated, x.Revision}
	}
	if x := f.Octavia; x != nil {
		o := s.oct()
		for _, y := range x.LBs {
			o.lbs[y.ID] = &loadBalancer{lbCommonIn(y.stLBCommon), y.VipSubnet, y.VipNetwork, y.VipPort, y.VipAddr, y.Provider, y.FlavorID, y.AZ}
		}
		for _, y := range x.Listeners {
			o.listeners[y.ID] = &lbListener{lbCommonIn(y.stLBCommon), y.LBID, y.Protocol, y.Port, y.DefaultPool, y.ConnLimit, y.AllowedCIDRs}
		}
		for _, y := range x.Pools {
			o.pools[y.ID] = &lbPool{lbCommonIn(y.stLBCommon), y.LBID, y.ListenerID, y.Protocol, y.Algorithm, y.Persistence, y.MonitorID, y.Members}
		}
		for _, y := range x.Members {
			o.members[y.ID] = &lbMember{lbCommonIn(y.stLBCommon), y.PoolID, y.Address, y.Port, y.SubnetID, y.Weight, y.Backup, y.MonitorAddr, y.MonitorPort}
		}
		for _, y := range x.Monitors {
			o.monitors[y.ID] = &lbMonitor{lbCommonIn(y.stLBCommon), y.PoolID, y.Type, y.Delay, y.Timeout, y.MaxRetries, y.MaxRetriesDown,
				y.HTTPMethod, y.URLPath, y.ExpectedCodes}
		}
		// Octavia's controller finishes what was pending.
		for id, lb := range o.lbs {
			if lb.prov != provActive {
				s.settle(id)
			}
		}
	}
	for _, x := range f.AppCreds {
		s.appCredTable()[x.ID] = &appCred{id: x.ID, name: x.Name, description: x.Description, secret: x.Secret, userID: x.UserID,
			projectID: x.ProjectID, roles: x.Roles, expires: x.Expires, unrestricted: x.Unrestricted, rules: x.Rules}
	}
}
