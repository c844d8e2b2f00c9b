// Package storetest opens stores for other packages' tests: each on a fresh
// database of the tests' PostgreSQL (pgtest), closed when the test ends.
package storetest

import (
	"context"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Open is a store on a fresh database, closed when t ends.
func Open(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), pgtest.NewDB(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// NewBox is a secrets box with a fresh key.
func NewBox(t testing.TB) *secrets.Box {
	t.Helper()
	key, err := secrets.ParseKey(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	box, err := secrets.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	return box
}
