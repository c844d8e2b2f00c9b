package ossim

import (
	"encoding/json"
	"fmt"
	"path"
	"time"
)

// Faults are the fault-injection settings. They can be changed at any time
// with SetFaults / UpdateFaults or over HTTP (GET/PUT/DELETE /_sim/faults).
type Faults struct {
	// FailResources make matching Heat resource actions fail.
	FailResources []ResourceFault `json:"fail_resources,omitempty"`
	// SlowStacks delay every operation (create, update, delete) of matching
	// top-level stacks before any resource is touched.
	SlowStacks []StackDelay `json:"slow_stacks,omitempty"`
	// SlowServers keep matching servers in BUILD for a while (what a
	// slow stack looks like to a real Heat in front of the simulator).
	SlowServers []ServerDelay `json:"slow_servers,omitempty"`
	// RefuseAuth makes POST /v3/auth/tokens answer 401 for everyone.
	RefuseAuth bool `json:"refuse_auth,omitempty"`
	// MaxServers is the instances quota per project (0 = unlimited): creating
	// one more fails like Nova ("Quota exceeded for instances ...", 403).
	MaxServers int `json:"max_servers,omitempty"`
	// MaxPorts is the ports quota per project (0 = unlimited).
	MaxPorts int `json:"max_ports,omitempty"`
}

// ResourceFault fails a resource action. Empty match fields match anything.
type ResourceFault struct {
	// Name is the resource's name in its template (e.g. "VDU1"); a glob.
	Name string `json:"name,omitempty"`
	// Type is the resource type (e.g. "OS::Nova::Server"); a glob.
	Type string `json:"type,omitempty"`
	// Stack is the top-level stack name; a glob.
	Stack string `json:"stack,omitempty"`
	// Action is CREATE (default), UPDATE or DELETE.
	Action string `json:"action,omitempty"`
	// Message is the error text (default: a Nova-like "No valid host was
	// found." for servers, "Injected failure" otherwise).
	Message string `json:"message,omitempty"`
	// Times is how often the fault fires before it is used up (0 = always).
	Times int `json:"times,omitempty"`
	// Fired counts how often it fired (read only).
	Fired int `json:"fired,omitempty"`
}

// StackDelay slows the operations of stacks whose name matches (a glob;
// empty = every stack).
type StackDelay struct {
	Stack string   `json:"stack,omitempty"`
	Delay Duration `json:"delay"`
	// Actions limits the delay to some of CREATE, UPDATE, DELETE (empty =
	// all).
	Actions []string `json:"actions,omitempty"`
}

// ServerDelay slows the boot of servers whose name matches (a glob; empty =
// every server).
type ServerDelay struct {
	Name  string   `json:"name,omitempty"`
	Delay Duration `json:"delay"`
}

// Duration is a time.Duration that reads and writes JSON as "1.5s" (numbers
// are taken as seconds).
type Duration time.Duration

// D returns the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "2s" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch t := v.(type) {
	case float64:
		*d = Duration(t * float64(time.Second))
	case string:
		x, err := time.ParseDuration(t)
		if err != nil {
			return err
		}
		*d = Duration(x)
	default:
		return fmt.Errorf("invalid duration %s", b)
	}
	return nil
}

func (f Faults) clone() Faults {
	f.FailResources = append([]ResourceFault(nil), f.FailResources...)
	f.SlowServers = append([]ServerDelay(nil), f.SlowServers...)
	f.SlowStacks = append([]StackDelay(nil), f.SlowStacks...)
	return f
}

// Faults returns the current fault settings.
func (s *Sim) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.clone()
}

// SetFaults replaces the fault settings.
func (s *Sim) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f.clone()
}

// UpdateFaults changes the fault settings in place.
func (s *Sim) UpdateFaults(fn func(*Faults)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults.clone()
	fn(&f)
	s.faults = f
}

// takeFault returns the message of the first live fault matching the
// resource action, and uses it up (s.mu held).
func (s *Sim) takeFault(r *resource, action string) string {
	top := r.st.top().name
	for i := range s.faults.FailResources {
		f := &s.faults.FailResources[i]
		a := f.Action
		if a == "" {
			a = "CREATE"
		}
		if a != action || (f.Times > 0 && f.Fired >= f.Times) {
			continue
		}
		if ok, _ := path.Match(orStar(f.Name), r.name); !ok {
			continue
		}
		if ok, _ := path.Match(orStar(f.Type), r.typ); !ok {
			continue
		}
		if ok, _ := path.Match(orStar(f.Stack), top); !ok {
			continue
		}
		f.Fired++
		msg := f.Message
		if msg == "" {
			if r.typ == "OS::Nova::Server" {
				msg = "No valid host was found. There are not enough hosts available."
			} else {
				msg = "Injected failure"
			}
		}
		return msg
	}
	return ""
}

// takeServerFault is takeFault for a server created through the Nova API
// by a real Heat (Options.Identity): the fault's Name matches the server
// name (Heat passes the template's name property, else its physical name),
// Type must match OS::Nova::Server and Stack is not known to Nova, so it is
// not compared (s.mu held).
func (s *Sim) takeServerFault(name string) string {
	for i := range s.faults.FailResources {
		f := &s.faults.FailResources[i]
		if (f.Action != "" && f.Action != "CREATE") || (f.Times > 0 && f.Fired >= f.Times) {
			continue
		}
		if ok, _ := path.Match(orStar(f.Name), name); !ok {
			continue
		}
		if ok, _ := path.Match(orStar(f.Type), "OS::Nova::Server"); !ok {
			continue
		}
		f.Fired++
		if f.Message != "" {
			return f.Message
		}
		return "No valid host was found. There are not enough hosts available."
	}
	return ""
}

// serverDelay is how long a server named name stays in BUILD beyond the
// latency (s.mu held).
func (s *Sim) serverDelay(name string) time.Duration {
	for _, d := range s.faults.SlowServers {
		if ok, _ := path.Match(orStar(d.Name), name); ok {
			return d.Delay.D()
		}
	}
	return 0
}
