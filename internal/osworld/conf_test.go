package osworld

import (
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Every URL the services are configured with is on loopback (the network
// rule: Keystone and Heat may call only this machine's test services).
func TestConfigURLsAreLoopback(t *testing.T) {
	confs := map[string]string{
		"keystone.conf": renderKeystoneConf(keystoneConfig{DB: "postgresql+psycopg2://u:p@127.0.0.1:5432/k", Dir: "/w"}),
		"heat.conf": renderHeatConf(heatConfig{DB: "postgresql+psycopg2://u:p@127.0.0.1:5432/h", Dir: "/w", KeystonePort: 5000,
			HeatPort: 8004, AuthKey: strings.Repeat("k", 32), ServicePassword: "s", DomainAdminPassword: "d", Host: "h"}),
	}
	urlRE := regexp.MustCompile(`[a-z0-9+]+://[^\s]+`)
	for name, conf := range confs {
		found := urlRE.FindAllString(conf, -1)
		if len(found) == 0 {
			t.Fatalf("%s: no URL", name)
		}
		for _, raw := range found {
			if raw == "fake://" {
				continue // the in-process transport
			}
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, raw, err)
			}
			a, err := netip.ParseAddr(u.Hostname())
			if err != nil || !a.IsLoopback() {
				t.Errorf("%s: %s is not a loopback address", name, raw)
			}
		}
	}
	for _, c := range catalog {
		if !strings.HasPrefix(c.url, heatPlaceholder) && !strings.HasPrefix(c.url, cloudPlaceholder) {
			t.Errorf("catalog entry %s is not on a loopback placeholder: %s", c.typ, c.url)
		}
	}
}

func TestParseProcAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0100007F:1F90", "127.0.0.1:8080"},
		{"0101A8C0:0050", "192.168.1.1:80"},
		{"00000000000000000000000001000000:0016", "[::1]:22"},
	} {
		got, ok := parseProcAddr(tc.in)
		if !ok || got.String() != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := parseProcAddr("zz:1"); ok {
		t.Error("garbage parsed")
	}
}
