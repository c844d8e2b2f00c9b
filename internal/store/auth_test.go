package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

func TestAuthClientsAndTokens(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	sum := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

	c := &store.AuthClient{ID: "nfvo-1", SecretSHA256: sum("secret"), Scopes: []string{"vnflcm:write"}, Description: "the NFVO"}
	if err := st.CreateAuthClient(ctx, c); err != nil || c.CreatedAt.IsZero() {
		t.Fatalf("create: %v %+v", err, c)
	}
	if err := st.CreateAuthClient(ctx, &store.AuthClient{ID: "nfvo-1", SecretSHA256: sum("x"), Scopes: []string{"*"}}); !errors.Is(err, store.ErrAuthClientExists) {
		t.Fatalf("duplicate: %v", err)
	}
	for _, bad := range []*store.AuthClient{
		{ID: "bad id", SecretSHA256: sum("x"), Scopes: []string{"*"}},
		{ID: "short-hash", SecretSHA256: []byte("x"), Scopes: []string{"*"}},
		{ID: "no-scopes", SecretSHA256: sum("x"), Scopes: []string{}},
	} {
		if err := st.CreateAuthClient(ctx, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	got, err := st.GetAuthClient(ctx, "nfvo-1")
	if err != nil || !bytes.Equal(got.SecretSHA256, sum("secret")) || got.Scopes[0] != "vnflcm:write" || got.Description != "the NFVO" {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := st.GetAuthClient(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get unknown: %v", err)
	}

	tok, err := st.CreateAuthToken(ctx, sum("tok-1"), "nfvo-1", []string{"vnflcm:read"}, time.Hour)
	if err != nil || tok.ExpiresAt.Sub(tok.IssuedAt) != time.Hour {
		t.Fatalf("token: %+v %v", tok, err)
	}
	if _, err := st.CreateAuthToken(ctx, sum("tok-x"), "nope", []string{"*"}, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("token for unknown client: %v", err)
	}
	if _, err := st.CreateAuthToken(ctx, sum("tok-old"), "nfvo-1", []string{"*"}, -time.Second); err != nil {
		t.Fatal(err)
	}
	// An expired token is not returned, a live one is.
	if _, err := st.GetAuthToken(ctx, sum("tok-old")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired token: %v", err)
	}
	live, err := st.GetAuthToken(ctx, sum("tok-1"))
	if err != nil || live.ClientID != "nfvo-1" || live.Scopes[0] != "vnflcm:read" {
		t.Fatalf("live token: %+v %v", live, err)
	}
	list, err := st.ListAuthClients(ctx)
	if err != nil || len(list) != 1 || list[0].ActiveTokens != 1 || list[0].SecretSHA256 != nil {
		t.Fatalf("list: %+v %v", list, err)
	}

	// Tokens long expired are purged when a new one is issued.
	if _, err := st.CreateAuthToken(ctx, sum("tok-ancient"), "nfvo-1", []string{"*"}, -2*time.Hour); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM auth_tokens WHERE token_sha256 = $1`, sum("tok-ancient")).Scan(&n); err != nil || n != 0 {
		t.Fatalf("ancient token kept: %d %v", n, err)
	}

	// Deleting the client revokes its tokens.
	if err := st.DeleteAuthClient(ctx, "nfvo-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetAuthToken(ctx, sum("tok-1")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("token of a deleted client: %v", err)
	}
	if err := st.DeleteAuthClient(ctx, "nfvo-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}
