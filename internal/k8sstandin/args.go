package k8sstandin

import (
	"fmt"
	"strings"
)

// flagSpec declares the flags a command accepts: name → takes a value. The
// parser accepts "--name value", "--name=value", "-x value" (via short) and
// flags anywhere among the positional arguments, like cobra.
type flagSpec struct {
	values map[string]bool // flag → takes a value
	short  map[string]string
}

type parsedArgs struct {
	flags map[string][]string
	pos   []string
}

func (p *parsedArgs) has(name string) bool { _, ok := p.flags[name]; return ok }

func (p *parsedArgs) get(name string) string {
	v := p.flags[name]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func (p *parsedArgs) bool(name string) bool {
	v, ok := p.flags[name]
	if !ok {
		return false
	}
	last := v[len(v)-1]
	return last == "" || last == "true"
}

// all returns every value of a repeatable flag, comma lists split.
func (p *parsedArgs) all(name string) []string {
	var out []string
	for _, v := range p.flags[name] {
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
	}
	return out
}

func parseFlags(args []string, spec flagSpec) (*parsedArgs, error) {
	p := &parsedArgs{flags: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			p.pos = append(p.pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			p.pos = append(p.pos, a)
			continue
		}
		var name, val string
		hasVal := false
		if strings.HasPrefix(a, "--") {
			name, val, hasVal = strings.Cut(a[2:], "=")
		} else {
			body := a[1:]
			n, v, hv := strings.Cut(body, "=")
			if len(body) > 1 && body[1] != '=' {
				// -oyaml / -ojsonpath={...} style: a short flag glued to its value.
				if long, ok := spec.short[body[:1]]; ok && spec.values[long] {
					n, v, hv = body[:1], body[1:], true
				}
			}
			long, ok := spec.short[n]
			if !ok {
				return nil, fmt.Errorf("unknown shorthand flag: %q in %s", n, a)
			}
			name, val, hasVal = long, v, hv
		}
		takesVal, known := spec.values[name]
		if !known {
			return nil, fmt.Errorf("unknown flag: --%s", name)
		}
		if takesVal && !hasVal {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag needs an argument: --%s", name)
			}
			i++
			val = args[i]
		}
		p.flags[name] = append(p.flags[name], val)
	}
	return p, nil
}

func spec(valued []string, bools []string, short map[string]string) flagSpec {
	s := flagSpec{values: map[string]bool{}, short: short}
	for _, v := range valued {
		s.values[v] = true
	}
	for _, b := range bools {
		s.values[b] = false
	}
	if s.short == nil {
		s.short = map[string]string{}
	}
	return s
}
