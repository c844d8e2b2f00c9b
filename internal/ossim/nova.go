package ossim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

type server struct {
	id, name, project, userID string
	status, vmState, task     string
	power                     int
	flavor                    *Flavor
	image                     string
	created, updated, launch  time.Time
	metadata                  map[string]string
	userData                  string
	keyName                   string
	az                        string
	ports                     []string
	autoPorts                 map[string]bool
	secGroups                 []string
	tags                      []string
	group                     string
	hostname                  string
	keys                      []testhosts.HostKey
	console                   []string
	keysAt                    time.Time // when the console shows the host keys (Options.HostKeysAfter)
	fault                     map[string]any
	host                      *testhosts.Host
	seq                       int
	deleting                  bool
	cc                        *cloudConfig
}

type serverGroup struct {
	id, name, project string
	policies          []string
	members           []string
}

// serverNet is one entry of a server's networks.
type serverNet struct {
	PortID    string
	NetworkID string
	FixedIP   string
}

type serverRequest struct {
	Name           string
	Flavor         string
	Image          string
	Networks       []serverNet
	UserData       string
	Metadata       map[string]string
	KeyName        string
	AZ             string
	Group          string
	SecurityGroups []string
	// FailMessage makes the boot end in ERROR with this fault (fault
	// injection).
	FailMessage string
}

func (s *Sim) findFlavor(ref string) *Flavor {
	for _, f := range s.flavors {
		if f.ID == ref || f.Name == ref {
			return f
		}
	}
	return nil
}

func imageID(name string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("ossim-image:"+name)).String()
}

// sanitizeHostname is Nova's hostname from a display name: lower case,
// letters, digits and "-".
func sanitizeHostname(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '_' || r == ' ' || r == '.':
			b.WriteRune('-')
		}
	}
	h := strings.Trim(b.String(), "-")
	if len(h) > 40 {
		h = strings.Trim(h[:40], "-")
	}
	return h
}

// createServer validates and records a server in BUILD (s.mu held). The
// caller boots it with bootServer.
func (s *Sim) createServer(project, userID string, req serverRequest) (*server, error) {
	fl := s.findFlavor(req.Flavor)
	if fl == nil {
		return nil, errf(400, "BadRequest", "Flavor %s could not be found.", req.Flavor)
	}
	img, ok := s.imageName(req.Image)
	if !ok {
		return nil, errf(400, "BadRequest", "Image %s could not be found.", req.Image)
	}
	req.Image = img
	if q := s.faults.MaxServers; q > 0 {
		used := 0
		for _, sv := range s.servers {
			if sv.project == project {
				used++
			}
		}
		if used >= q {
			return nil, errf(403, "Forbidden", "Quota exceeded for instances: Requested 1, but already used %d of %d instances", used, q)
		}
	}
	now := s.now()
	s.serverSeq++
	sv := &server{id: uuid.NewString(), name: req.Name, project: project, userID: userID, status: "BUILD", vmState: "building",
		task: "scheduling", flavor: fl, image: req.Image, created: now, updated: now, metadata: req.Metadata,
		userData: req.UserData, keyName: req.KeyName, az: req.AZ, autoPorts: map[string]bool{}, group: req.Group, seq: s.serverSeq}
	if sv.az == "" {
		sv.az = "nova"
	}
	if sv.metadata == nil {
		sv.metadata = map[string]string{}
	}
	sv.hostname = sanitizeHostname(req.Name)
	if sv.hostname == "" {
		sv.hostname = "server-" + sv.id[:8]
	}
	if req.Group != "" {
		g := s.srvGroups[req.Group]
		if g == nil {
			return nil, errf(400, "BadRequest", "Invalid server group %s", req.Group)
		}
		g.members = append(g.members, sv.id)
	}
	// Ports: given ones are bound, networks get a port made by Nova.
	var made []string
	cleanup := func() {
		for _, id := range made {
			s.deletePort(id)
		}
	}
	for _, sn := range req.Networks {
		if sn.PortID != "" {
			p := s.ports[sn.PortID]
			if p == nil {
				cleanup()
				return nil, errf(400, "BadRequest", "Port id %s could not be found.", sn.PortID)
			}
			if p.deviceID != "" && p.deviceID != sv.id {
				cleanup()
				return nil, errf(409, "Conflict", "Port %s is still in use.", sn.PortID)
			}
			sv.ports = append(sv.ports, p.id)
			continue
		}
		var fixed []map[string]any
		if sn.FixedIP != "" {
			fixed = []map[string]any{{"ip_address": sn.FixedIP}}
		}
		p, err := s.createPort(project, portRequest{NetworkID: sn.NetworkID, FixedIPs: fixed})
		if err != nil {
			cleanup()
			if ae, ok := err.(*apiError); ok && ae.code == 404 {
				return nil, errf(400, "BadRequest", "Network %s could not be found.", sn.NetworkID)
			}
			return nil, err
		}
		made = append(made, p.id)
		sv.ports = append(sv.ports, p.id)
		sv.autoPorts[p.id] = true
	}
	for _, id := range sv.ports {
		p := s.ports[id]
		p.deviceID, p.deviceOwner, p.status, p.hostID = sv.id, "compute:"+sv.az, "ACTIVE", "sim-compute-1"
		p.updated = now
	}
	sv.secGroups = req.SecurityGroups
	if len(sv.secGroups) == 0 {
		sv.secGroups = []string{"default"}
	}
	s.servers[sv.id] = sv
	s.logf("nova: server %s (%s) BUILD", sv.name, sv.id)
	return sv, nil
}

// hostPort returns the server's port on the host-backed network and its
// address (s.mu held).
func (s *Sim) hostPort(sv *server) (*port, netip.Addr) {
	if s.hostNet == nil {
		return nil, netip.Addr{}
	}
	for _, id := range sv.ports {
		if p := s.ports[id]; p != nil && p.networkID == s.hostNet.id && len(p.fixed) > 0 {
			return p, p.fixed[0].ip
		}
	}
	return nil, netip.Addr{}
}

// bootServer takes a server from BUILD to ACTIVE (or ERROR): latency, the
// real host when enabled, cloud-init steps, console log. Called without
// s.mu. The returned error is the fault message when the server is ERROR.
func (s *Sim) bootServer(ctx context.Context, sv *server, failMsg string) error {
	s.mu.Lock()
	sv.task = "spawning"
	raw := sv.userData
	s.mu.Unlock()
	if err := sleep(ctx, s.opts.Latency); err != nil {
		return s.serverError(sv, "Build of instance "+sv.id+" aborted: "+err.Error())
	}
	if failMsg != "" {
		return s.serverError(sv, failMsg)
	}
	cc := parseUserData(raw, s.opts.ServerUser, s.opts.ServerPassword)
	keys, err := testhosts.GenerateHostKeys("root@" + sv.hostname)
	if err != nil {
		return s.serverError(sv, err.Error())
	}
	s.mu.Lock()
	sv.cc = cc
	sv.keys = keys
	if cc.hostname != "" {
		if h := sanitizeHostname(cc.hostname); h != "" {
			sv.hostname = h
		}
	}
	p, ip := s.hostPort(sv)
	var spec testhosts.HostSpec
	if p != nil && s.opts.Hosts != nil {
		spec = testhosts.HostSpec{
			Name: hostKey(sv), Hostname: sv.hostname, IP: ip, MAC: p.mac, Users: cc.users, HostKeys: keys,
			NoPasswordAuth: cc.pwauth != nil && !*cc.pwauth, NoPeers: true,
		}
	}
	s.mu.Unlock()
	var log []string
	if spec.Name != "" {
		h, err := s.opts.Hosts.AddHost(ctx, spec)
		if err != nil {
			return s.serverError(sv, "Build of instance "+sv.id+" aborted: test host: "+err.Error())
		}
		s.mu.Lock()
		gone := s.servers[sv.id] != sv || sv.deleting
		if !gone {
			sv.host = h
		}
		s.mu.Unlock()
		if gone {
			_ = h.Remove(context.Background())
			return nil
		}
		s.applyFIPsForServer(sv)
		log = s.runCloudInit(ctx, h, cc)
		if s.opts.HostSetup != nil {
			if err := s.opts.HostSetup(ctx, h); err != nil {
				return s.serverError(sv, "Build of instance "+sv.id+" aborted: host setup: "+err.Error())
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servers[sv.id] != sv || sv.deleting {
		return nil
	}
	now := s.now()
	sv.status, sv.vmState, sv.task, sv.power, sv.launch, sv.updated = "ACTIVE", "active", "", 1, now, now
	sv.console, sv.keysAt = s.consoleLog(sv, log), time.Now().Add(s.opts.HostKeysAfter)
	s.logf("nova: server %s (%s) ACTIVE%s", sv.name, sv.id, map[bool]string{true: " as test host " + spec.Name, false: ""}[spec.Name != ""])
	return nil
}

func hostKey(sv *server) string {
	h := sv.hostname
	if len(h) > 24 {
		h = strings.Trim(h[:24], "-")
	}
	return h + "-" + sv.id[:6]
}

func (s *Sim) serverError(sv *server, msg string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	sv.status, sv.vmState, sv.task, sv.power, sv.updated = "ERROR", "error", "", 0, now
	sv.fault = map[string]any{"code": 500, "created": novaTime(now), "message": msg}
	s.logf("nova: server %s (%s) ERROR: %s", sv.name, sv.id, msg)
	return fmt.Errorf("%s", msg)
}

// runCloudInit performs the cloud-init steps that touch the host.
func (s *Sim) runCloudInit(ctx context.Context, h *testhosts.Host, cc *cloudConfig) []string {
	var log []string
	run := func(what, cmd string) {
		out, err := h.Exec(ctx, "/bin/sh", "-c", cmd)
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if l != "" {
				log = append(log, l)
			}
		}
		if err != nil {
			log = append(log, fmt.Sprintf("cloud-init: %s failed: %v", what, err))
		}
	}
	for _, c := range cc.bootcmd {
		run("bootcmd", c)
	}
	for _, f := range cc.writeFiles {
		op := ">"
		if f.append {
			op = ">>"
		}
		cmd := fmt.Sprintf("mkdir -p \"$(dirname %[1]s)\" && printf %%s %[2]s | base64 -d %[3]s %[1]s && chmod %[4]s %[1]s",
			shq(f.path), shq(b64(f.content)), op, shq(f.perms))
		if f.owner != "" {
			cmd += " && chown " + shq(f.owner) + " " + shq(f.path)
		}
		run("write_files "+f.path, cmd)
	}
	for _, c := range cc.runcmd {
		run("runcmd", c)
	}
	for i, sc := range cc.scripts {
		p := fmt.Sprintf("/var/lib/cloud/instance/scripts/part-%03d", i+1)
		run("script", fmt.Sprintf("mkdir -p /var/lib/cloud/instance/scripts && printf %%s %s | base64 -d > %s && chmod 700 %s && %s", shq(b64([]byte(sc))), p, p, p))
	}
	for _, w := range cc.warnings {
		log = append(log, "cloud-init: WARNING: "+w)
	}
	return log
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// consoleLog renders a cloud-init style console log, with the host key
// fingerprints where cloud-init prints them (s.mu held).
func (s *Sim) consoleLog(sv *server, extra []string) []string {
	ts := sv.launch.Format("Jan _2 15:04:05")
	who := "root@" + sv.hostname
	lines := []string{
		"[    0.000000] Linux version 6.1.0-28-cloud-amd64 (debian-kernel@lists.debian.org) (ossim)",
		"[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz root=LABEL=cloudimg-rootfs ro console=tty1 console=ttyS0",
		fmt.Sprintf("[    2.104233] cloud-init[312]: Cloud-init v. 23.1.2 running 'init-local' at %s. Up 2.10 seconds.", sv.launch.Format(time.RFC1123Z)),
		fmt.Sprintf("[    3.481002] cloud-init[401]: Cloud-init v. 23.1.2 running 'init' at %s. Up 3.48 seconds.", sv.launch.Format(time.RFC1123Z)),
		"[    3.490000] cloud-init[401]: ci-info: ++++++++++++++++++++++++++++++++Net device info+++++++++++++++++++++++++++++++++",
	}
	for i, pid := range sv.ports {
		if p := s.ports[pid]; p != nil && len(p.fixed) > 0 {
			lines = append(lines, fmt.Sprintf("[    3.490000] cloud-init[401]: ci-info: | eth%d | True | %s | %s |", i, p.fixed[0].ip, p.mac))
		}
	}
	for _, u := range usersOf(sv) {
		if len(u.AuthorizedKeys) == 0 {
			lines = append(lines, fmt.Sprintf("[    3.600000] cloud-init[401]: ci-info: no authorized SSH keys fingerprints found for user %s.", u.Name))
		}
	}
	lines = append(lines, fmt.Sprintf("<14>%s cloud-init: #############################################################", ts),
		fmt.Sprintf("<14>%s cloud-init: -----BEGIN SSH HOST KEY FINGERPRINTS-----", ts))
	keys := append([]testhosts.HostKey(nil), sv.keys...)
	sort.Slice(keys, func(i, j int) bool { return keys[i].Label < keys[j].Label }) // ECDSA, ED25519 like cloud-init
	for _, l := range testhosts.FingerprintLines(keys, who) {
		lines = append(lines, fmt.Sprintf("<14>%s cloud-init: %s", ts, l))
	}
	lines = append(lines, fmt.Sprintf("<14>%s cloud-init: -----END SSH HOST KEY FINGERPRINTS-----", ts),
		fmt.Sprintf("<14>%s cloud-init: #############################################################", ts),
		"-----BEGIN SSH HOST KEY KEYS-----")
	for _, k := range keys {
		lines = append(lines, k.AuthorizedKey)
	}
	lines = append(lines, "-----END SSH HOST KEY KEYS-----")
	for _, l := range extra {
		lines = append(lines, "[    5.100000] cloud-init[530]: "+l)
	}
	lines = append(lines, fmt.Sprintf("[    5.430000] cloud-init[530]: Cloud-init v. 23.1.2 finished at %s. Datasource DataSourceOpenStackLocal [net,ver=2].  Up 5.43 seconds",
		sv.launch.Format(time.RFC1123Z)),
		"",
		fmt.Sprintf("Debian GNU/Linux 12 %s ttyS0", sv.hostname),
		"",
		sv.hostname+" login: ")
	return lines
}

// withoutHostKeys is a console log before cloud-init printed the host
// keys: the lines from the first key block on are not there yet.
func withoutHostKeys(lines []string) []string {
	for i, l := range lines {
		if strings.Contains(l, "-----BEGIN SSH HOST KEY FINGERPRINTS-----") {
			return lines[:max(i-1, 0)] // and the ##### line above it
		}
	}
	return lines
}

func usersOf(sv *server) []testhosts.User {
	if sv.cc == nil {
		return nil
	}
	return sv.cc.users
}

// ConsoleHostKeys extracts what cloud-init printed between the
// "BEGIN SSH HOST KEY FINGERPRINTS" and "BEGIN SSH HOST KEY KEYS" markers:
// the SHA256 fingerprints and the public key lines.
func ConsoleHostKeys(console string) (fingerprints, keys []string) {
	inFP, inKeys := false, false
	for _, l := range strings.Split(console, "\n") {
		switch {
		case strings.Contains(l, "-----BEGIN SSH HOST KEY FINGERPRINTS-----"):
			inFP = true
		case strings.Contains(l, "-----END SSH HOST KEY FINGERPRINTS-----"):
			inFP = false
		case strings.Contains(l, "-----BEGIN SSH HOST KEY KEYS-----"):
			inKeys = true
		case strings.Contains(l, "-----END SSH HOST KEY KEYS-----"):
			inKeys = false
		case inFP:
			for _, f := range strings.Fields(l) {
				if strings.HasPrefix(f, "SHA256:") {
					fingerprints = append(fingerprints, f)
				}
			}
		case inKeys && strings.TrimSpace(l) != "":
			keys = append(keys, strings.TrimSpace(l))
		}
	}
	return fingerprints, keys
}

// deleteServer deletes a server: the host goes, Nova-made ports are deleted,
// others detached. Called without s.mu.
func (s *Sim) deleteServer(ctx context.Context, id string) error {
	s.mu.Lock()
	sv := s.servers[id]
	if sv == nil {
		s.mu.Unlock()
		return nil
	}
	sv.deleting, sv.task = true, "deleting"
	h := sv.host
	sv.host = nil
	s.mu.Unlock()
	_ = sleep(ctx, s.opts.ResourceLatency)
	if h != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := h.Remove(rctx)
		cancel()
		if err != nil {
			s.logf("nova: remove host of %s: %v", id, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pid := range slices.Clone(sv.ports) { // detachPortFromServer edits sv.ports
		p := s.ports[pid]
		if p == nil {
			continue
		}
		s.unrouteFIPsOfPort(p)
		if sv.autoPorts[pid] {
			s.deletePort(pid)
		} else {
			s.detachPortFromServer(p)
		}
	}
	for _, g := range s.srvGroups {
		g.members = slices.DeleteFunc(g.members, func(x string) bool { return x == id })
	}
	delete(s.servers, id)
	s.logf("nova: server %s (%s) deleted", sv.name, id)
	return nil
}

// detachInterface detaches a port from a running server (Nova's
// os-interface DELETE; Heat does it before it replaces a server whose port
// the replacement takes over). A real host that loses its port on the host
// network is taken down first — a VM without its only NIC is unreachable,
// and the address must be free for the server that gets the port next —
// and the detach shows only once that is done (Heat polls os-interface).
// Called without s.mu.
func (s *Sim) detachInterface(ctx context.Context, sv *server, p *port) {
	_ = sleep(ctx, s.opts.ResourceLatency)
	s.mu.Lock()
	var h *testhosts.Host
	if hp, _ := s.hostPort(sv); hp == p && sv.host != nil {
		h, sv.host = sv.host, nil
	}
	s.mu.Unlock()
	if h != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := h.Remove(rctx); err != nil {
			s.logf("nova: remove host of %s after its port was detached: %v", sv.id, err)
		}
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.deviceID == sv.id {
		s.unrouteFIPsOfPort(p)
		s.detachPortFromServer(p)
		delete(sv.autoPorts, p.id)
		s.logf("nova: port %s detached from server %s (%s)", p.id, sv.name, sv.id)
	}
}

// novaAttachInterface attaches a port (port_id) or a new port on a network
// (net_id, optional fixed_ips) to a server. The attachment is recorded; a
// real host keeps the address it booted with (hosts have one NIC).
func (s *Sim) novaAttachInterface(w http.ResponseWriter, r *http.Request, tok *token, sv *server) {
	var body struct {
		IA struct {
			PortID   string           `json:"port_id"`
			NetID    string           `json:"net_id"`
			FixedIPs []map[string]any `json:"fixed_ips"`
		} `json:"interfaceAttachment"`
	}
	if err := readJSON(r, &body); err != nil {
		novaErr(w, 400, "Malformed request body")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var p *port
	switch {
	case body.IA.PortID != "":
		p = s.ports[body.IA.PortID]
		if p == nil {
			novaErr(w, 404, "Port "+body.IA.PortID+" could not be found.")
			return
		}
		if p.deviceID != "" && p.deviceID != sv.id {
			novaErr(w, 409, "Port "+p.id+" is still in use.")
			return
		}
	case body.IA.NetID != "":
		var err error
		if p, err = s.createPort(tok.account.ProjectID, portRequest{NetworkID: body.IA.NetID, FixedIPs: body.IA.FixedIPs}); err != nil {
			novaAPIErr(w, err)
			return
		}
		sv.autoPorts[p.id] = true
	default:
		novaErr(w, 400, "Invalid input for field/attribute interfaceAttachment: port_id or net_id is required")
		return
	}
	if !slices.Contains(sv.ports, p.id) {
		sv.ports = append(sv.ports, p.id)
	}
	p.deviceID, p.deviceOwner, p.status, p.hostID, p.updated = sv.id, "compute:"+sv.az, "ACTIVE", "sim-compute-1", s.now()
	pj := s.portJSON(p)
	s.logf("nova: port %s attached to server %s (%s)", p.id, sv.name, sv.id)
	writeJSON(w, http.StatusOK, map[string]any{"interfaceAttachment": map[string]any{"port_id": p.id, "net_id": p.networkID,
		"mac_addr": p.mac, "port_state": p.status, "fixed_ips": pj["fixed_ips"]}})
}

func (s *Sim) detachPortFromServer(p *port) {
	if sv := s.servers[p.deviceID]; sv != nil {
		sv.ports = slices.DeleteFunc(sv.ports, func(x string) bool { return x == p.id })
	}
	p.deviceID, p.deviceOwner, p.status, p.hostID, p.updated = "", "", "DOWN", "", s.now()
}

// ---- floating IPs on real hosts ----
// A floating IP associated with a port of a real host is added to the host's
// eth0 as a /32, with a /32 route to it in the ctl namespace via the host's
// fixed address. Both namespaces belong to the simulator.

func (s *Sim) hostOfPort(portID string) (*testhosts.Host, netip.Addr) {
	p := s.ports[portID]
	if p == nil || p.deviceID == "" {
		return nil, netip.Addr{}
	}
	sv := s.servers[p.deviceID]
	if sv == nil || sv.host == nil {
		return nil, netip.Addr{}
	}
	if hp, ip := s.hostPort(sv); hp != nil {
		return sv.host, ip
	}
	return nil, netip.Addr{}
}

func (s *Sim) routeFIP(f *floatingIP, add bool) {
	if s.opts.Hosts == nil || f.portID == "" {
		return
	}
	ctl := s.opts.Hosts.CtlNamespace()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, via := s.hostOfPort(f.portID)
	if !add {
		// The route goes even when the host is already gone.
		_, _ = runIP(ctx, "-n", ctl, "route", "del", f.addr.String()+"/32")
		if h != nil {
			_, _ = runIP(ctx, "-n", h.NetNS, "addr", "del", f.addr.String()+"/32", "dev", "eth0")
		}
		return
	}
	if h == nil {
		return
	}
	if _, err := runIP(ctx, "-n", h.NetNS, "addr", "replace", f.addr.String()+"/32", "dev", "eth0"); err != nil {
		s.logf("nova: floating ip %s on %s: %v", f.addr, h.Name, err)
	}
	if _, err := runIP(ctx, "-n", ctl, "route", "replace", f.addr.String()+"/32", "via", via.String()); err != nil {
		s.logf("nova: floating ip route %s: %v", f.addr, err)
	}
}

func (s *Sim) fipChanged(f *floatingIP) { s.routeFIP(f, true) }

func (s *Sim) fipMoved(old, f *floatingIP) {
	if old.portID != "" {
		s.routeFIP(old, false)
	}
	if f.portID != "" {
		s.routeFIP(f, true)
	}
}

func (s *Sim) applyFIPsForServer(sv *server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.fips {
		if slices.Contains(sv.ports, f.portID) {
			s.routeFIP(f, true)
		}
	}
}

func (s *Sim) unrouteFIPsOfPort(p *port) {
	if s.opts.Hosts == nil {
		return
	}
	for _, f := range s.fips {
		if f.portID == p.id {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = runIP(ctx, "-n", s.opts.Hosts.CtlNamespace(), "route", "del", f.addr.String()+"/32")
			cancel()
		}
	}
}

// ---- JSON ----

func (s *Sim) serverJSON(sv *server, base string) map[string]any {
	addrs := map[string]any{}
	for _, pid := range sv.ports {
		p := s.ports[pid]
		if p == nil {
			continue
		}
		n := s.nets[p.networkID]
		name := p.networkID
		if n != nil {
			name = n.name
		}
		list, _ := addrs[name].([]any)
		for _, f := range p.fixed {
			list = append(list, map[string]any{"OS-EXT-IPS-MAC:mac_addr": p.mac, "version": 4, "addr": f.ip.String(), "OS-EXT-IPS:type": "fixed"})
		}
		for _, fip := range s.fips {
			if fip.portID == p.id {
				list = append(list, map[string]any{"OS-EXT-IPS-MAC:mac_addr": p.mac, "version": 4, "addr": fip.addr.String(), "OS-EXT-IPS:type": "floating"})
			}
		}
		addrs[name] = list
	}
	sgs := []any{}
	for _, g := range sv.secGroups {
		sgs = append(sgs, map[string]any{"name": g})
	}
	hostID := sha256.Sum224([]byte(sv.project + "sim-compute-1"))
	var launched any
	if !sv.launch.IsZero() {
		launched = sv.launch.UTC().Format("2006-01-02T15:04:05.000000")
	}
	var keyName any
	if sv.keyName != "" {
		keyName = sv.keyName
	}
	task := any(nil)
	if sv.task != "" {
		task = sv.task
	}
	progress := 0
	if sv.status == "ACTIVE" {
		progress = 100
	}
	img := imageID(sv.image)
	m := map[string]any{
		"id": sv.id, "name": sv.name, "status": sv.status, "tenant_id": sv.project, "user_id": sv.userID,
		"created": novaTime(sv.created), "updated": novaTime(sv.updated), "hostId": hex.EncodeToString(hostID[:]),
		"addresses": addrs, "metadata": sv.metadata, "key_name": keyName, "security_groups": sgs,
		"image":  map[string]any{"id": img, "links": []any{map[string]any{"rel": "bookmark", "href": base + "/compute/images/" + img}}},
		"flavor": map[string]any{"id": sv.flavor.ID, "links": []any{map[string]any{"rel": "bookmark", "href": base + "/compute/flavors/" + sv.flavor.ID}}},
		"links": []any{
			map[string]any{"rel": "self", "href": base + "/compute/v2.1/servers/" + sv.id},
			map[string]any{"rel": "bookmark", "href": base + "/compute/servers/" + sv.id}},
		"accessIPv4": "", "accessIPv6": "", "progress": progress, "config_drive": "",
		"OS-DCF:diskConfig": "MANUAL", "OS-EXT-AZ:availability_zone": sv.az,
		"OS-EXT-STS:vm_state": sv.vmState, "OS-EXT-STS:task_state": task, "OS-EXT-STS:power_state": sv.power,
		"OS-EXT-SRV-ATTR:host": "sim-compute-1", "OS-EXT-SRV-ATTR:hypervisor_hostname": "sim-compute-1",
		"OS-EXT-SRV-ATTR:instance_name": fmt.Sprintf("instance-%08x", sv.seq),
		"OS-SRV-USG:launched_at":        launched, "OS-SRV-USG:terminated_at": nil,
		"os-extended-volumes:volumes_attached": []any{}, "locked": false,
	}
	if sv.fault != nil {
		m["fault"] = sv.fault
	}
	return m
}

func flavorJSON(f *Flavor, base string) map[string]any {
	return map[string]any{
		"id": f.ID, "name": f.Name, "ram": f.RAM, "vcpus": f.VCPUs, "disk": f.Disk,
		"OS-FLV-EXT-DATA:ephemeral": 0, "swap": "", "rxtx_factor": 1.0,
		"os-flavor-access:is_public": true, "OS-FLV-DISABLED:disabled": false,
		"links": []any{map[string]any{"rel": "self", "href": base + "/compute/v2.1/flavors/" + f.ID},
			map[string]any{"rel": "bookmark", "href": base + "/compute/flavors/" + f.ID}},
	}
}

// ---- API ----

func novaErr(w http.ResponseWriter, code int, msg string) {
	key := map[int]string{400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound", 409: "conflictingRequest", 405: "methodNotAllowed"}[code]
	if key == "" {
		key = "computeFault"
	}
	writeJSON(w, code, map[string]any{key: map[string]any{"code": code, "message": msg}})
}

func novaAPIErr(w http.ResponseWriter, err error) {
	if ae, ok := err.(*apiError); ok {
		novaErr(w, ae.code, ae.msg)
		return
	}
	novaErr(w, 500, err.Error())
}

// novaMaxMicroversion is the newest compute microversion the simulator
// announces: its responses have every field up to it (those after 2.1 are
// additions), and clients that negotiate (Heat's novaclient asks for the
// announced maximum) get what they asked for. Heat 19 uses 2.15 (soft
// affinity policies), 2.26 (server tags), 2.37 (networks "none"/"auto") and
// 2.42 (NIC tags).
const novaMaxMicroversion = "2.42"

// novaMicroversion reads the requested compute microversion ("latest"
// means the maximum); ok is false when it is out of range (Nova: 406).
func novaMicroversion(r *http.Request) (string, bool) {
	v := ""
	if h := r.Header.Get("OpenStack-API-Version"); h != "" {
		if svc, ver, found := strings.Cut(strings.TrimSpace(h), " "); found && strings.EqualFold(svc, "compute") {
			v = strings.TrimSpace(ver)
		}
	}
	if v == "" {
		v = strings.TrimSpace(r.Header.Get("X-OpenStack-Nova-API-Version"))
	}
	switch v {
	case "":
		return "2.1", true
	case "latest":
		return novaMaxMicroversion, true
	}
	major, minor, ok := parseMicroversion(v)
	_, maxMinor, _ := parseMicroversion(novaMaxMicroversion)
	if !ok || major != 2 || minor < 1 || minor > maxMinor {
		return v, false
	}
	return v, true
}

func parseMicroversion(v string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(v, ".")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	return x, y, err1 == nil && err2 == nil
}

func (s *Sim) serveNova(w http.ResponseWriter, r *http.Request) {
	base := s.baseURL(r)
	segs := pathSegments(r.URL.Path, "/compute")
	v21 := map[string]any{"id": "v2.1", "status": "CURRENT", "version": novaMaxMicroversion, "min_version": "2.1", "updated": "2013-07-23T11:33:21Z",
		"links": []any{map[string]any{"rel": "self", "href": base + "/compute/v2.1/"}}}
	if len(segs) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{v21}})
		return
	}
	if segs[0] != "v2.1" {
		novaErr(w, 404, "The resource could not be found.")
		return
	}
	if len(segs) == 1 {
		writeJSON(w, http.StatusOK, map[string]any{"version": v21})
		return
	}
	tok, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	segs = segs[1:]
	// Tolerate /v2.1/{project_id}/... (old-style endpoints).
	if len(segs) > 1 && segs[0] == tok.account.ProjectID {
		segs = segs[1:]
	}
	mv, ok := novaMicroversion(r)
	if !ok {
		novaErr(w, http.StatusNotAcceptable, "Version "+mv+" is not supported by the API. Minimum is 2.1 and maximum is "+novaMaxMicroversion+".")
		return
	}
	w.Header().Set("OpenStack-API-Version", "compute "+mv)
	w.Header().Set("X-OpenStack-Nova-API-Version", mv)
	w.Header().Add("Vary", "OpenStack-API-Version, X-OpenStack-Nova-API-Version")
	switch segs[0] {
	case "servers":
		s.novaServers(w, r, tok, base, segs[1:])
	case "flavors":
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case len(segs) == 1 || (len(segs) == 2 && segs[1] == "detail"):
			list := []any{}
			for _, f := range s.flavors {
				if len(segs) == 1 {
					list = append(list, map[string]any{"id": f.ID, "name": f.Name, "links": flavorJSON(f, base)["links"]})
				} else {
					list = append(list, flavorJSON(f, base))
				}
			}
			writeJSON(w, http.StatusOK, map[string]any{"flavors": list})
		case len(segs) == 2:
			f := s.findFlavor(segs[1])
			if f == nil {
				novaErr(w, 404, "Flavor "+segs[1]+" could not be found.")
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"flavor": flavorJSON(f, base)})
		default:
			novaErr(w, 404, "The resource could not be found.")
		}
	case "os-server-groups":
		s.novaServerGroups(w, r, tok, segs[1:])
	case "limits":
		s.mu.Lock()
		used, cores, ram := 0, 0, 0
		for _, sv := range s.servers {
			if sv.project == tok.account.ProjectID {
				used, cores, ram = used+1, cores+sv.flavor.VCPUs, ram+sv.flavor.RAM
			}
		}
		max := s.faults.MaxServers
		s.mu.Unlock()
		if max <= 0 {
			max = -1
		}
		writeJSON(w, http.StatusOK, map[string]any{"limits": map[string]any{"rate": []any{}, "absolute": map[string]any{
			"maxTotalInstances": max, "totalInstancesUsed": used, "maxTotalCores": -1, "totalCoresUsed": cores,
			"maxTotalRAMSize": -1, "totalRAMUsed": ram, "maxServerGroups": -1, "totalServerGroupsUsed": len(s.srvGroups),
			"maxServerMeta": 128, "maxTotalKeypairs": 100}}})
	default:
		novaErr(w, 404, "The resource could not be found.")
	}
}

func (s *Sim) novaServers(w http.ResponseWriter, r *http.Request, tok *token, base string, segs []string) {
	switch {
	case len(segs) == 0 && r.Method == http.MethodPost:
		s.novaCreateServer(w, r, tok, base)
		return
	case len(segs) == 0 || (len(segs) == 1 && segs[0] == "detail"):
		if r.Method != http.MethodGet {
			novaErr(w, 405, "Method not allowed")
			return
		}
		detail := len(segs) == 1
		q := r.URL.Query()
		var nameRE *regexp.Regexp
		if n := q.Get("name"); n != "" {
			re, err := regexp.Compile(n)
			if err != nil {
				novaErr(w, 400, "Invalid regular expression for name")
				return
			}
			nameRE = re
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		var list []*server
		for _, sv := range s.servers {
			if sv.project != tok.account.ProjectID && q.Get("all_tenants") == "" {
				continue
			}
			if nameRE != nil && !nameRE.MatchString(sv.name) {
				continue
			}
			if st := q.Get("status"); st != "" && !strings.EqualFold(st, sv.status) {
				continue
			}
			if ip := q.Get("ip"); ip != "" && !s.serverHasIP(sv, ip) {
				continue
			}
			list = append(list, sv)
		}
		sort.Slice(list, func(i, j int) bool {
			if !list[i].created.Equal(list[j].created) {
				return list[i].created.After(list[j].created)
			}
			return list[i].id < list[j].id
		})
		if m := q.Get("marker"); m != "" {
			idx := slices.IndexFunc(list, func(x *server) bool { return x.id == m })
			if idx < 0 {
				novaErr(w, 400, "marker ["+m+"] not found")
				return
			}
			list = list[idx+1:]
		}
		resp := map[string]any{}
		if lim, err := strconv.Atoi(q.Get("limit")); err == nil && lim > 0 && len(list) > lim {
			list = list[:lim]
			nq := r.URL.Query()
			nq.Set("marker", list[len(list)-1].id)
			p := "/compute/v2.1/servers"
			if detail {
				p += "/detail"
			}
			resp["servers_links"] = []any{map[string]any{"rel": "next", "href": base + p + "?" + nq.Encode()}}
		}
		out := []any{}
		for _, sv := range list {
			if detail {
				out = append(out, s.serverJSON(sv, base))
			} else {
				j := s.serverJSON(sv, base)
				out = append(out, map[string]any{"id": sv.id, "name": sv.name, "links": j["links"]})
			}
		}
		resp["servers"] = out
		writeJSON(w, http.StatusOK, resp)
		return
	}
	id := segs[0]
	s.mu.Lock()
	sv := s.servers[id]
	if sv == nil || (sv.project != tok.account.ProjectID) {
		s.mu.Unlock()
		novaErr(w, 404, "Instance "+id+" could not be found.")
		return
	}
	switch {
	case len(segs) == 1 && r.Method == http.MethodGet:
		j := s.serverJSON(sv, base)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"server": j})
	case len(segs) == 1 && r.Method == http.MethodDelete:
		s.mu.Unlock()
		s.goAsync(func(ctx context.Context) { _ = s.deleteServer(ctx, id) })
		w.WriteHeader(http.StatusNoContent)
	case len(segs) == 1 && r.Method == http.MethodPut:
		var body struct {
			Server struct {
				Name *string `json:"name"`
			} `json:"server"`
		}
		if err := readJSON(r, &body); err != nil {
			s.mu.Unlock()
			novaErr(w, 400, "Malformed request body")
			return
		}
		if body.Server.Name != nil {
			sv.name, sv.updated = *body.Server.Name, s.now()
		}
		j := s.serverJSON(sv, base)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"server": j})
	case len(segs) == 2 && segs[1] == "metadata" && r.Method == http.MethodGet:
		md := sv.metadata
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"metadata": md})
	case len(segs) == 2 && segs[1] == "os-interface" && r.Method == http.MethodGet:
		list := []any{}
		for _, pid := range sv.ports {
			if p := s.ports[pid]; p != nil {
				pj := s.portJSON(p)
				list = append(list, map[string]any{"port_id": p.id, "net_id": p.networkID, "mac_addr": p.mac,
					"port_state": p.status, "fixed_ips": pj["fixed_ips"]})
			}
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"interfaceAttachments": list})
	case len(segs) == 2 && segs[1] == "os-interface" && r.Method == http.MethodPost:
		s.mu.Unlock()
		s.novaAttachInterface(w, r, tok, sv)
	case len(segs) == 3 && segs[1] == "os-interface" && r.Method == http.MethodGet:
		p := s.ports[segs[2]]
		if p == nil || p.deviceID != sv.id {
			s.mu.Unlock()
			novaErr(w, 404, "Port "+segs[2]+" is not attached")
			return
		}
		pj := s.portJSON(p)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"interfaceAttachment": map[string]any{"port_id": p.id, "net_id": p.networkID,
			"mac_addr": p.mac, "port_state": p.status, "fixed_ips": pj["fixed_ips"]}})
	case len(segs) == 3 && segs[1] == "os-interface" && r.Method == http.MethodDelete:
		p := s.ports[segs[2]]
		if p == nil || p.deviceID != sv.id {
			s.mu.Unlock()
			novaErr(w, 404, "Port "+segs[2]+" is not attached")
			return
		}
		s.mu.Unlock()
		s.goAsync(func(ctx context.Context) { s.detachInterface(ctx, sv, p) })
		w.WriteHeader(http.StatusAccepted)
	case len(segs) == 2 && segs[1] == "action" && r.Method == http.MethodPost:
		s.mu.Unlock()
		s.novaAction(w, r, sv)
	case len(segs) == 2 && segs[1] == "tags" && (r.Method == http.MethodGet || r.Method == http.MethodPut):
		// Server tags (microversion 2.26, which Heat's server plugin uses).
		if r.Method == http.MethodPut {
			var body struct {
				Tags []string `json:"tags"`
			}
			if err := readJSON(r, &body); err != nil {
				s.mu.Unlock()
				novaErr(w, 400, "Malformed request body")
				return
			}
			sv.tags = body.Tags
		}
		tags := append([]string{}, sv.tags...)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"tags": tags})
	default:
		s.mu.Unlock()
		novaErr(w, 404, "The resource could not be found.")
	}
}

func (s *Sim) serverHasIP(sv *server, ip string) bool {
	for _, pid := range sv.ports {
		if p := s.ports[pid]; p != nil {
			for _, f := range p.fixed {
				if strings.Contains(f.ip.String(), ip) {
					return true
				}
			}
		}
	}
	return false
}

func (s *Sim) novaCreateServer(w http.ResponseWriter, r *http.Request, tok *token, base string) {
	var body struct {
		Server struct {
			Name      string            `json:"name"`
			ImageRef  string            `json:"imageRef"`
			FlavorRef string            `json:"flavorRef"`
			Networks  any               `json:"networks"`
			UserData  string            `json:"user_data"`
			Metadata  map[string]string `json:"metadata"`
			KeyName   string            `json:"key_name"`
			AZ        string            `json:"availability_zone"`
			SecGroups []struct {
				Name string `json:"name"`
			} `json:"security_groups"`
		} `json:"server"`
		Hints map[string]any `json:"os:scheduler_hints"`
	}
	if err := readJSON(r, &body); err != nil {
		novaErr(w, 400, "Malformed request body: "+err.Error())
		return
	}
	b := body.Server
	if b.Name == "" {
		novaErr(w, 400, "Invalid input for field/attribute server. Value: 'name' is a required property")
		return
	}
	req := serverRequest{Name: b.Name, Flavor: b.FlavorRef, Image: b.ImageRef, UserData: decodeUserData(b.UserData),
		Metadata: b.Metadata, KeyName: b.KeyName, AZ: b.AZ}
	for _, g := range b.SecGroups {
		req.SecurityGroups = append(req.SecurityGroups, g.Name)
	}
	if g, ok := body.Hints["group"].(string); ok {
		req.Group = g
	}
	for _, nm := range listOfMaps(b.Networks) {
		req.Networks = append(req.Networks, serverNet{PortID: str(nm, "port"), NetworkID: str(nm, "uuid"), FixedIP: str(nm, "fixed_ip")})
	}
	s.mu.Lock()
	if len(req.Networks) == 0 && b.Networks != "none" {
		// "auto" or nothing: the first shared network, like a default network.
		if s.hostNet != nil {
			req.Networks = []serverNet{{NetworkID: s.hostNet.id}}
		} else {
			for _, n := range s.nets {
				if !n.external {
					req.Networks = []serverNet{{NetworkID: n.id}}
					break
				}
			}
		}
	}
	sv, err := s.createServer(tok.account.ProjectID, tok.account.UserID, req)
	failMsg, delay := "", time.Duration(0)
	if err == nil && s.opts.Identity != nil {
		// Behind a real Heat, injected server faults act here.
		failMsg, delay = s.takeServerFault(sv.name), s.serverDelay(sv.name)
	}
	s.mu.Unlock()
	if err != nil {
		novaAPIErr(w, err)
		return
	}
	s.goAsync(func(ctx context.Context) {
		if sleep(ctx, delay) == nil {
			_ = s.bootServer(ctx, sv, failMsg)
		}
	})
	writeJSON(w, http.StatusAccepted, map[string]any{"server": map[string]any{
		"id": sv.id, "adminPass": randomHex(6), "OS-DCF:diskConfig": "MANUAL",
		"security_groups": []any{map[string]any{"name": "default"}},
		"links": []any{map[string]any{"rel": "self", "href": base + "/compute/v2.1/servers/" + sv.id},
			map[string]any{"rel": "bookmark", "href": base + "/compute/servers/" + sv.id}}}})
}

func (s *Sim) novaAction(w http.ResponseWriter, r *http.Request, sv *server) {
	var body map[string]any
	if err := readJSON(r, &body); err != nil {
		novaErr(w, 400, "Malformed request body")
		return
	}
	s.mu.Lock()
	status := sv.status
	h := sv.host
	s.mu.Unlock()
	switch {
	case has(body, "os-getConsoleOutput"):
		if status == "BUILD" {
			novaErr(w, 409, fmt.Sprintf("Cannot 'get_console_output' instance %s while it is in vm_state building", sv.id))
			return
		}
		length := -1
		if m, ok := body["os-getConsoleOutput"].(map[string]any); ok {
			if n, ok := toNumber(m["length"]); ok {
				length = int(n)
			}
		}
		s.mu.Lock()
		lines := sv.console
		if time.Now().Before(sv.keysAt) {
			lines = withoutHostKeys(lines) // cloud-init has not got that far yet
		}
		s.mu.Unlock()
		if length >= 0 && length < len(lines) {
			lines = lines[len(lines)-length:]
		}
		writeJSON(w, http.StatusOK, map[string]any{"output": strings.Join(lines, "\n")})
	case has(body, "reboot"):
		if status != "ACTIVE" && status != "SHUTOFF" {
			novaErr(w, 409, fmt.Sprintf("Cannot 'reboot' instance %s while it is in vm_state %s", sv.id, strings.ToLower(status)))
			return
		}
		s.setServerState(sv, "REBOOT", "active", "rebooting", 1)
		s.goAsync(func(ctx context.Context) {
			if h != nil {
				if err := h.Restart(ctx); err != nil {
					_ = s.serverError(sv, "reboot: "+err.Error())
					return
				}
			}
			_ = sleep(ctx, s.opts.ResourceLatency)
			s.setServerState(sv, "ACTIVE", "active", "", 1)
		})
		w.WriteHeader(http.StatusAccepted)
	case has(body, "os-stop"):
		if status != "ACTIVE" {
			novaErr(w, 409, fmt.Sprintf("Cannot 'stop' instance %s while it is in vm_state %s", sv.id, strings.ToLower(status)))
			return
		}
		s.setServerState(sv, "ACTIVE", "active", "powering-off", 1)
		s.goAsync(func(ctx context.Context) {
			if h != nil {
				_ = h.Stop(ctx)
			}
			s.setServerState(sv, "SHUTOFF", "stopped", "", 4)
		})
		w.WriteHeader(http.StatusAccepted)
	case has(body, "os-start"):
		if status != "SHUTOFF" {
			novaErr(w, 409, fmt.Sprintf("Cannot 'start' instance %s while it is in vm_state %s", sv.id, strings.ToLower(status)))
			return
		}
		s.setServerState(sv, "SHUTOFF", "stopped", "powering-on", 4)
		s.goAsync(func(ctx context.Context) {
			if h != nil {
				if err := h.Start(ctx); err != nil {
					_ = s.serverError(sv, "start: "+err.Error())
					return
				}
			}
			s.setServerState(sv, "ACTIVE", "active", "", 1)
		})
		w.WriteHeader(http.StatusAccepted)
	case has(body, "rebuild"):
		m, _ := body["rebuild"].(map[string]any)
		s.mu.Lock()
		if img := str(m, "imageRef"); img != "" {
			name, ok := s.imageName(img)
			if !ok {
				s.mu.Unlock()
				novaErr(w, 400, "Image "+img+" could not be found.")
				return
			}
			sv.image = name
		}
		s.mu.Unlock()
		s.setServerState(sv, "REBUILD", "active", "rebuilding", 1)
		s.goAsync(func(ctx context.Context) { _ = s.rebuildServer(ctx, sv) })
		s.mu.Lock()
		j := s.serverJSON(sv, s.baseURL(r))
		s.mu.Unlock()
		writeJSON(w, http.StatusAccepted, map[string]any{"server": j})
	default:
		novaErr(w, 400, "The server action is not supported by the simulator.")
	}
}

// rebuildServer gives the server a fresh disk and host keys, keeping its id
// and ports (the host is reimaged at the same address).
func (s *Sim) rebuildServer(ctx context.Context, sv *server) error {
	s.mu.Lock()
	h := sv.host
	s.mu.Unlock()
	keys, err := testhosts.GenerateHostKeys("root@" + sv.hostname)
	if err != nil {
		return s.serverError(sv, err.Error())
	}
	if h != nil {
		if err := h.Reimage(ctx); err != nil {
			return s.serverError(sv, "rebuild: "+err.Error())
		}
		keys = h.HostKeys()
	} else if err := sleep(ctx, s.opts.Latency); err != nil {
		return err
	}
	var log []string
	if h != nil && sv.cc != nil {
		log = s.runCloudInit(ctx, h, sv.cc)
	}
	if h != nil && s.opts.HostSetup != nil {
		if err := s.opts.HostSetup(ctx, h); err != nil {
			return s.serverError(sv, "rebuild: host setup: "+err.Error())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	sv.keys = keys
	sv.status, sv.vmState, sv.task, sv.power, sv.launch, sv.updated = "ACTIVE", "active", "", 1, now, now
	sv.console, sv.keysAt = s.consoleLog(sv, log), time.Now().Add(s.opts.HostKeysAfter)
	return nil
}

func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func (s *Sim) setServerState(sv *server, status, vm, task string, power int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv.status, sv.vmState, sv.task, sv.power, sv.updated = status, vm, task, power, s.now()
}

func (s *Sim) novaServerGroups(w http.ResponseWriter, r *http.Request, tok *token, segs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	js := func(g *serverGroup) map[string]any {
		return map[string]any{"id": g.id, "name": g.name, "policies": g.policies, "members": append([]string{}, g.members...),
			"metadata": map[string]any{}, "project_id": g.project, "user_id": tok.account.UserID}
	}
	switch {
	case len(segs) == 0 && r.Method == http.MethodGet:
		list := []any{}
		for _, g := range s.srvGroups {
			list = append(list, js(g))
		}
		writeJSON(w, http.StatusOK, map[string]any{"server_groups": list})
	case len(segs) == 0 && r.Method == http.MethodPost:
		var body struct {
			SG struct {
				Name     string   `json:"name"`
				Policies []string `json:"policies"`
			} `json:"server_group"`
		}
		if err := readJSON(r, &body); err != nil || body.SG.Name == "" {
			novaErr(w, 400, "Invalid input for field/attribute server_group.")
			return
		}
		g := s.addServerGroup(tok.account.ProjectID, body.SG.Name, body.SG.Policies)
		writeJSON(w, http.StatusOK, map[string]any{"server_group": js(g)})
	case len(segs) == 1:
		g := s.srvGroups[segs[0]]
		if g == nil {
			novaErr(w, 404, "Instance group "+segs[0]+" could not be found.")
			return
		}
		if r.Method == http.MethodDelete {
			delete(s.srvGroups, g.id)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"server_group": js(g)})
	default:
		novaErr(w, 404, "The resource could not be found.")
	}
}

func (s *Sim) addServerGroup(project, name string, policies []string) *serverGroup {
	if len(policies) == 0 {
		policies = []string{"anti-affinity"}
	}
	g := &serverGroup{id: uuid.NewString(), name: name, project: project, policies: policies, members: []string{}}
	s.srvGroups[g.id] = g
	return g
}
