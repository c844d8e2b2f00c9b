package openstack

import (
	"os"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/osworld"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
)

// The database server real Keystone and Heat keep their state in.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, nil)) }

// heatWorld, while TestRealHeatDriver runs, puts every harness's simulator
// behind real Keystone and Heat (the package's tests run one at a time).
var heatWorld *osworld.World

// TestRealHeatDriver runs the driver's scenarios against real Keystone 22
// and Heat 19.0.0 (internal/osworld), whose Nova, Neutron and Glance are
// the simulator: the same tests, judged by OpenStack's own Heat engine.
func TestRealHeatDriver(t *testing.T) {
	w := osworld.Shared(t, pgtest.Cluster())
	heatWorld = w
	defer func() { heatWorld = nil }()
	// Instantiate, terminate, rollback of a failed instantiate and the
	// whole lifecycle run against real Heat end to end (test/e2e
	// TestRealHeat*); here the scenarios whose details only the driver's
	// tests check.
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"ScaleOutAndIn", TestScaleOutAndIn},
		{"HealOneVnfc", TestHealOneVnfcKeepsAddress},
		{"HealEntire", TestHealEntireRecreatesStack},
		{"ChangeExtConn", TestChangeExtConn},
		{"RetryAfterFailedInstantiate", TestRetryAfterFailedInstantiateRecreates},
		{"FailedScaleOutRollback", TestFailedScaleOutRollback},
		{"ResumeAfterCrash", TestResumeAfterCrashNoDuplicate},
	} {
		t.Run(tc.name, tc.run)
	}
}
