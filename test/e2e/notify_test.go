package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// TestNotificationsSurviveReceiverOutageAndKill9: the NFVO's endpoint is down
// for 60 s while operations run and the VNFM is killed -9 in the middle; once
// the endpoint is back, every notification arrives, in order, exactly once
// after de-duplication by id.
func TestNotificationsSurviveReceiverOutageAndKill9(t *testing.T) {
	t.Parallel() // mostly waiting: let the other end-to-end tests run meanwhile
	db := pgtest.NewDB(t)
	seedPackage(t, db)
	key := secrets.NewKey()

	var down atomic.Bool
	var mu sync.Mutex
	var got []map[string]any
	seen := map[string]bool{}
	nfvo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var n map[string]any
		_ = json.Unmarshal(b, &n)
		mu.Lock()
		if id, _ := n["id"].(string); !seen[id] {
			seen[id] = true
			got = append(got, n)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer nfvo.Close()

	a := harness.Start(t, roleFake, db, key, "VNFM_NOTIFY_BACKOFF_MIN=200ms", "VNFM_NOTIFY_BACKOFF_MAX=2s")
	if code, _, b := call(t, "POST", a.Base+"/vnflcm/v1/subscriptions", `{"callbackUri":"`+nfvo.URL+`/notify"}`); code != 201 {
		t.Fatalf("subscribe: %d %s", code, b)
	}
	down.Store(true)
	outage := time.Now()
	_, op1 := createAndInstantiate(t, a.Base, `{"delayMs":100}`)
	harness.WaitOp(t, a.Base, op1, 30*time.Second, "COMPLETED")
	_, op2 := createAndInstantiate(t, a.Base, `{"delayMs":400}`)
	time.Sleep(300 * time.Millisecond) // op2 is running
	if err := a.Kill9(); err != nil {
		t.Fatal(err)
	}
	b := harness.Start(t, roleFake, db, key, "VNFM_NOTIFY_BACKOFF_MIN=200ms", "VNFM_NOTIFY_BACKOFF_MAX=2s")
	harness.WaitOp(t, b.Base, op2, 30*time.Second, "COMPLETED")
	if d := 60*time.Second - time.Since(outage); d > 0 {
		time.Sleep(d)
	}
	mu.Lock()
	if len(got) != 0 {
		t.Fatalf("%d notifications delivered while the endpoint was down", len(got))
	}
	mu.Unlock()
	down.Store(false)

	want := []string{"VnfIdentifierCreationNotification", "INSTANTIATE/STARTING", "INSTANTIATE/PROCESSING", "INSTANTIATE/COMPLETED",
		"VnfIdentifierCreationNotification", "INSTANTIATE/STARTING", "INSTANTIATE/PROCESSING", "INSTANTIATE/COMPLETED"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d notifications arrived after the outage", n, len(want))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	var keys []string
	for _, n := range got {
		k, _ := n["notificationType"].(string)
		if op, ok := n["operation"].(string); ok {
			k = op + "/" + n["operationState"].(string)
		}
		keys = append(keys, k)
	}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("notifications after the outage:\n got %v\nwant %v", keys, want)
	}
}
