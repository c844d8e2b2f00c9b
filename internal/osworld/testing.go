package osworld

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

var (
	sharedMu  sync.Mutex
	shared    *World
	sharedErr error
)

// Shared returns the test binary's world, starting it on first use on the
// PostgreSQL server adminDBURL (pgtest.Cluster()). It lives until the
// test binary exits (its processes die with it; its databases with the
// pgtest cluster). A world that cannot start fails the test with the
// reason: real-Heat tests never skip.
func Shared(t testing.TB, adminDBURL string) *World {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		shared, sharedErr = Start(ctx, Options{AdminDBURL: adminDBURL, Logf: func(f string, a ...any) { t.Logf(f, a...) }})
		if sharedErr == nil {
			v, _ := PackageVersions()
			t.Logf("osworld: real Keystone %s + Heat %s started in %s", v["keystone"], v["heat-engine"], shared.Started.Round(time.Millisecond))
			shared.opts.Logf = func(string, ...any) {}
		}
	}
	if sharedErr != nil {
		t.Fatalf("real Keystone + Heat: %v", sharedErr)
	}
	w := shared
	t.Cleanup(func() {
		if out := w.Outbound(); len(out) > 0 {
			t.Errorf("osworld: Keystone or Heat connected off loopback: %s", strings.Join(out, ", "))
		}
		if w.Stopped("heat") || w.Stopped("keystone") {
			t.Errorf("osworld: a service died:\nheat:\n%s\nkeystone:\n%s", w.LogTail("heat", 30), w.LogTail("keystone", 30))
		}
	})
	return w
}

// Tenant creates a project and user for test t (removed from the front's
// routes when t ends).
func (w *World) Tenant(t testing.TB) Tenant {
	t.Helper()
	name := fmt.Sprintf("t%s", randomHex(5))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tn, err := w.NewTenant(ctx, name)
	if err != nil {
		t.Fatalf("osworld: %v", err)
	}
	t.Cleanup(func() { w.Unserve(tn.ProjectID) })
	return tn
}

// SimOptions makes simulator options serve tenant tn behind this world's
// Keystone: tokens are validated by Keystone and the networks created at
// start belong to the tenant's project.
func (w *World) SimOptions(tn Tenant, o ossim.Options) ossim.Options {
	o.Identity = w.Identity()
	o.Region = w.Region
	o.Accounts = []ossim.Account{{UserName: tn.User, UserID: tn.UserID, Password: tn.Password,
		ProjectName: tn.Project, ProjectID: tn.ProjectID}}
	return o
}
