package ossim

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// ServerInfo describes a server and its test host, for tests and the CLI.
type ServerInfo struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Status    string   `json:"status"`
	Hostname  string   `json:"hostname"`
	Addresses []string `json:"addresses"`
	// Host is the test host's name ("" when servers are records only).
	Host  string `json:"host,omitempty"`
	NetNS string `json:"netns,omitempty"`
	PID1  int    `json:"pid1,omitempty"`
	// HostKeyFingerprints are the SHA256 fingerprints published in the
	// console log.
	HostKeyFingerprints []string  `json:"host_key_fingerprints"`
	Created             time.Time `json:"created"`
	// Metadata is the server's Nova metadata.
	Metadata map[string]string `json:"metadata,omitempty"`
}

func (s *Sim) serverInfo(sv *server) ServerInfo {
	si := ServerInfo{ID: sv.id, Name: sv.name, Status: sv.status, Hostname: sv.hostname, Created: sv.created, Metadata: maps.Clone(sv.metadata)}
	for _, pid := range sv.ports {
		if p := s.ports[pid]; p != nil {
			for _, f := range p.fixed {
				si.Addresses = append(si.Addresses, f.ip.String())
			}
		}
	}
	for _, k := range sv.keys {
		si.HostKeyFingerprints = append(si.HostKeyFingerprints, k.Fingerprint)
	}
	if sv.host != nil {
		si.Host, si.NetNS, si.PID1 = sv.host.Name, sv.host.NetNS, sv.host.PID1()
	}
	return si
}

// Servers lists all servers, oldest first.
func (s *Sim) Servers() []ServerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ServerInfo
	for _, sv := range s.servers {
		out = append(out, s.serverInfo(sv))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// findServer looks a server up by id, name, hostname, test host name or
// address (s.mu held).
func (s *Sim) findServer(ref string) (*server, error) {
	if sv := s.servers[ref]; sv != nil {
		return sv, nil
	}
	var found []*server
	for _, sv := range s.servers {
		si := s.serverInfo(sv)
		if sv.name == ref || sv.hostname == ref || (si.Host != "" && si.Host == ref) || contains(si.Addresses, ref) {
			found = append(found, sv)
		}
	}
	switch len(found) {
	case 0:
		return nil, errf(404, "NotFound", "no server %q", ref)
	case 1:
		return found[0], nil
	}
	return nil, errf(409, "Conflict", "%d servers match %q; use the id", len(found), ref)
}

// Host returns the test host of a server (by id, name, hostname or
// address), or nil when it has none.
func (s *Sim) Host(ref string) *testhosts.Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, err := s.findServer(ref)
	if err != nil {
		return nil
	}
	return sv.host
}

// serveAdmin is the simulator's own API (no token, 127.0.0.1 only):
//
//	GET    /_sim                      summary
//	GET    /_sim/faults               current faults
//	PUT    /_sim/faults               replace faults (JSON Faults)
//	DELETE /_sim/faults               clear faults
//	POST   /_sim/tokens/revoke        revoke every token
//	GET    /_sim/servers              servers with their test hosts
//	GET    /_sim/servers/{ref}        one server
//	POST   /_sim/servers/{ref}/exec   {"command": ["hostname"]} → {"output", "exit_code"}
func (s *Sim) serveAdmin(w http.ResponseWriter, r *http.Request) {
	segs := pathSegments(r.URL.Path, "/_sim")
	adminErr := func(code int, msg string) {
		writeJSON(w, code, map[string]any{"error": msg})
	}
	switch {
	case len(segs) == 0 && r.Method == http.MethodGet:
		s.mu.Lock()
		n := map[string]int{"stacks": 0, "servers": len(s.servers), "ports": len(s.ports), "networks": len(s.nets)}
		for _, st := range s.stacks {
			if !st.deleted && st.parent == nil {
				n["stacks"]++
			}
		}
		var hostNet any
		if s.opts.Hosts != nil {
			hostNet = map[string]any{"network": s.hostNet.name, "subnet": s.opts.Hosts.Subnet().String(),
				"ctl_netns": s.opts.Hosts.CtlNamespace(), "gateway": s.opts.Hosts.Gateway().String()}
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"auth_url": s.baseURL(r) + "/v3", "region": s.opts.Region,
			"hosts": hostNet, "counts": n, "faults": s.Faults()})
	case len(segs) == 1 && segs[0] == "faults":
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, s.Faults())
		case http.MethodPut:
			var f Faults
			if err := readJSON(r, &f); err != nil {
				adminErr(400, err.Error())
				return
			}
			s.SetFaults(f)
			writeJSON(w, http.StatusOK, s.Faults())
		case http.MethodDelete:
			s.SetFaults(Faults{})
			w.WriteHeader(http.StatusNoContent)
		default:
			adminErr(405, "method not allowed")
		}
	case len(segs) == 2 && segs[0] == "tokens" && segs[1] == "revoke" && r.Method == http.MethodPost:
		s.RevokeTokens()
		w.WriteHeader(http.StatusNoContent)
	case len(segs) == 1 && segs[0] == "servers" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"servers": orDefault(any(s.Servers()), []any{})})
	case len(segs) >= 2 && segs[0] == "servers":
		s.mu.Lock()
		sv, err := s.findServer(segs[1])
		var info ServerInfo
		var h *testhosts.Host
		if err == nil {
			info, h = s.serverInfo(sv), sv.host
		}
		s.mu.Unlock()
		if err != nil {
			var ae *apiError
			errors.As(err, &ae)
			adminErr(ae.code, ae.msg)
			return
		}
		switch {
		case len(segs) == 2 && r.Method == http.MethodGet:
			writeJSON(w, http.StatusOK, info)
		case len(segs) == 3 && segs[2] == "exec" && r.Method == http.MethodPost:
			var b struct {
				Command []string `json:"command"`
				Timeout Duration `json:"timeout"`
			}
			if err := readJSON(r, &b); err != nil || len(b.Command) == 0 {
				adminErr(400, `body must be {"command": ["prog", "arg", ...]}`)
				return
			}
			if h == nil {
				adminErr(409, "server "+info.Name+" has no test host (start the simulator with hosts)")
				return
			}
			to := b.Timeout.D()
			if to <= 0 {
				to = time.Minute
			}
			ctx, cancel := context.WithTimeout(r.Context(), to)
			defer cancel()
			out, err := h.Command(ctx, b.Command[0], b.Command[1:]...).CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				adminErr(500, err.Error())
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"output": string(out), "exit_code": code})
		default:
			adminErr(404, "not found")
		}
	default:
		adminErr(404, "not found")
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// runIP runs ip(8) (only ever with -n <namespace of ours>).
func runIP(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return string(out), errors.New("ip " + strings.Join(args, " ") + ": " + err.Error() + ": " + strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
