package outbound

import (
	"fmt"
	"net/netip"
	"strings"
)

// Settings is the policy's part of the server configuration
// (internal/config embeds it; docs/security.md documents it).
type Settings struct {
	// Loopback is allow, deny or auto (allow when the VNFM itself listens
	// on loopback or runs the embedded cloud, i.e. a development setup).
	Loopback string `env:"VNFM_OUTBOUND_LOOPBACK" envDefault:"auto"`
	// Private is allow or deny: NFVOs and clouds usually live on private
	// networks, so the default allows them.
	Private string `env:"VNFM_OUTBOUND_PRIVATE" envDefault:"allow"`
	// Allow and Deny are comma-separated prefixes (10.1.0.0/16, 2001:db8::/32)
	// or addresses that refine the above.
	Allow string `env:"VNFM_OUTBOUND_ALLOW"`
	Deny  string `env:"VNFM_OUTBOUND_DENY"`
}

// Policy builds the policy; devSetup resolves Loopback=auto. Empty
// settings (a Settings built in code) take the defaults.
func (s Settings) Policy(devSetup bool) (*Policy, error) {
	p := &Policy{}
	var err error
	if p.AllowLoopback, err = choice("VNFM_OUTBOUND_LOOPBACK", s.Loopback, devSetup, true); err != nil {
		return nil, err
	}
	private := s.Private
	if strings.TrimSpace(private) == "" {
		private = "allow"
	}
	if p.AllowPrivate, err = choice("VNFM_OUTBOUND_PRIVATE", private, true, false); err != nil {
		return nil, err
	}
	if p.Allow, err = prefixes("VNFM_OUTBOUND_ALLOW", s.Allow); err != nil {
		return nil, err
	}
	if p.Deny, err = prefixes("VNFM_OUTBOUND_DENY", s.Deny); err != nil {
		return nil, err
	}
	for _, a := range p.Allow {
		for _, r := range alwaysRefused {
			if r.p.Overlaps(a) {
				return nil, fmt.Errorf("VNFM_OUTBOUND_ALLOW: %s overlaps %s, which is %s and always refused", a, r.p, r.reason)
			}
		}
	}
	return p, nil
}

func choice(name, v string, auto, autoOK bool) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "allow", "on", "true", "1":
		return true, nil
	case "deny", "off", "false", "0":
		return false, nil
	case "auto", "":
		if autoOK {
			return auto, nil
		}
	}
	want := "allow or deny"
	if autoOK {
		want = "allow, deny or auto"
	}
	return false, fmt.Errorf("%s=%q: say %s", name, v, want)
}

func prefixes(name, v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is neither an address nor a prefix (write 10.1.0.0/16 or 2001:db8::1)", name, f)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
