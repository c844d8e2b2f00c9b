package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// settledFixture makes instances in every state a refresh must tell apart
// and returns them by name.
func settledFixture(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	ids := map[string]string{}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := st.Pool().Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	op := func(inst, state string) {
		t.Helper()
		exec(`INSERT INTO vnf_lcm_op_occs (id, vnf_instance_id, operation, operation_state) VALUES ($1,$2,'SCALE',$3)`,
			uuid.NewString(), inst, state)
	}
	for _, name := range []string{"plain", "busy", "failed", "failedThenFine", "notInstantiated", "failedTemp"} {
		ids[name] = newInstance(t, st, name)
		if name != "notInstantiated" {
			exec(`UPDATE vnf_instances SET instantiation_state='INSTANTIATED' WHERE id=$1`, ids[name])
		}
	}
	op(ids["plain"], model.StateCompleted)
	op(ids["busy"], model.StateProcessing)
	op(ids["failed"], model.StateCompleted)
	op(ids["failed"], model.StateFailed)
	op(ids["failedThenFine"], model.StateFailed)
	op(ids["failedThenFine"], model.StateCompleted)
	op(ids["failedTemp"], model.StateFailedTemp)
	return ids
}

func TestSettledInstancesAreOnlyTheIdleInstantiatedOnes(t *testing.T) {
	st := open(t)
	ids := settledFixture(t, st)
	var got []string
	var after int64
	for range 10 { // pages of one: the keyset walk reaches every settled instance once
		page, err := st.SettledInstances(context.Background(), after, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page[0].ID)
		after = page[0].Seq
	}
	want := []string{ids["plain"], ids["failedThenFine"]}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("settled instances %v, want plain and failedThenFine %v (all: %v)", got, want, ids)
	}
}

func TestRefreshInstanceWritesOnlyWhatIsStillAsRead(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	ids := settledFixture(t, st)
	refresh := func(name string, version func(v int64) int64) (bool, *store.Instance) {
		t.Helper()
		in, err := st.GetInstance(ctx, ids[name])
		if err != nil {
			t.Fatal(err)
		}
		doc := in.VnfInstance
		mark := uuid.NewString()
		doc.Metadata = map[string]any{"refreshed": mark}
		wrote, err := st.RefreshInstance(ctx, &doc, version(in.Version))
		if err != nil {
			t.Fatal(err)
		}
		after, err := st.GetInstance(ctx, ids[name])
		if err != nil {
			t.Fatal(err)
		}
		if wrote != (after.Metadata["refreshed"] == mark) || wrote != (after.Version == in.Version+1) {
			t.Fatalf("%s: wrote %v but stored metadata %v version %d (was %d)", name, wrote, after.Metadata, after.Version, in.Version)
		}
		return wrote, after
	}
	same := func(v int64) int64 { return v }
	for name, want := range map[string]bool{"plain": true, "failedThenFine": true, "busy": false, "failed": false, "failedTemp": false, "notInstantiated": false} {
		if wrote, _ := refresh(name, same); wrote != want {
			t.Errorf("%s: refresh wrote %v, want %v", name, wrote, want)
		}
	}
	if wrote, _ := refresh("plain", func(v int64) int64 { return v - 1 }); wrote {
		t.Error("a refresh read at an older version overwrote a newer document")
	}
	in, err := st.GetInstance(ctx, ids["plain"])
	if err != nil {
		t.Fatal(err)
	}
	missing := in.VnfInstance
	missing.ID = uuid.NewString()
	if wrote, err := st.RefreshInstance(ctx, &missing, 1); wrote || err != nil {
		t.Fatalf("refresh of a deleted instance: wrote %v err %v, want nothing and no error", wrote, err)
	}
}

// An operation accepted while a refresh waits for the instance's row lock
// wins: the refresh, once it has the lock, sees the operation and writes
// nothing (the engine's run reads the instance after the acceptance).
func TestRefreshInstanceYieldsToAnOperationAcceptedMeanwhile(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	ids := settledFixture(t, st)
	in, err := st.GetInstance(ctx, ids["plain"])
	if err != nil {
		t.Fatal(err)
	}
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	// What CreateOpOcc does: lock the instance, insert the operation.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM vnf_instances WHERE id=$1 FOR UPDATE`, in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO vnf_lcm_op_occs (id, vnf_instance_id, operation, operation_state) VALUES ($1,$2,'HEAL','STARTING')`,
		uuid.NewString(), in.ID); err != nil {
		t.Fatal(err)
	}
	doc := in.VnfInstance
	doc.Metadata = map[string]any{"refreshed": true}
	type result struct {
		wrote bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		wrote, err := st.RefreshInstance(ctx, &doc, in.Version)
		done <- result{wrote, err}
	}()
	// Wait (bounded) until the refresh waits for the lock.
	waiting := false
	for i := 0; i < 200 && !waiting; i++ {
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type='Lock' AND datname=current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if !waiting {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !waiting {
		t.Fatal("the refresh did not wait for the instance's row lock")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.wrote {
		t.Fatalf("refresh after an operation was accepted: wrote %v err %v, want no write", r.wrote, r.err)
	}
}
