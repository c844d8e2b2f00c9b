package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/sshpin"
)

// HostKeyPins is the PostgreSQL pin store of SSH host keys (table
// host_keys), one pin per (server id, address, key type). It implements
// sshpin.PinStore (with the types of internal/sshpin, so that store does not import remote).
type HostKeyPins struct{ s *Store }

// HostKeyPins returns the host key pin store.
func (s *Store) HostKeyPins() *HostKeyPins { return &HostKeyPins{s: s} }

// checkPin rejects pins whose fields disagree with their key.
func checkPin(serverID, address string, p sshpin.Pin) error {
	if serverID == "" || address == "" {
		return errors.New("store: host key pin needs a server id and an address")
	}
	key, err := ssh.ParsePublicKey(p.Key)
	if err != nil {
		return fmt.Errorf("store: host key pin for %s/%s: bad public key: %w", serverID, address, err)
	}
	if key.Type() != p.KeyType || ssh.FingerprintSHA256(key) != p.Fingerprint {
		return fmt.Errorf("store: host key pin for %s/%s: type %q / fingerprint %q do not match the key (%s %s)",
			serverID, address, p.KeyType, p.Fingerprint, key.Type(), ssh.FingerprintSHA256(key))
	}
	return nil
}

// Get returns the pins of a server address, oldest first.
func (h *HostKeyPins) Get(ctx context.Context, serverID, address string) ([]sshpin.Pin, error) {
	rows, err := h.s.pool.Query(ctx, `SELECT key_type, fingerprint, public_key, first_seen, last_seen
		FROM host_keys WHERE server_id = $1 AND address = $2 ORDER BY first_seen, key_type`, serverID, address)
	if err != nil {
		return nil, fmt.Errorf("store: host keys of %s/%s: %w", serverID, address, err)
	}
	pins, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sshpin.Pin, error) {
		var p sshpin.Pin
		err := r.Scan(&p.KeyType, &p.Fingerprint, &p.Key, &p.FirstSeen, &p.LastSeen)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: host keys of %s/%s: %w", serverID, address, err)
	}
	return pins, nil
}

// Put pins p unless a key of its type is pinned already; if exactly this key
// is pinned it refreshes last_seen. A different pinned key of the same type
// leaves everything unchanged and yields an error wrapping
// sshpin.ErrConflict. Safe against concurrent first contacts.
func (h *HostKeyPins) Put(ctx context.Context, serverID, address string, p sshpin.Pin) error {
	if err := checkPin(serverID, address, p); err != nil {
		return err
	}
	var ok bool
	err := h.s.pool.QueryRow(ctx, `INSERT INTO host_keys (server_id, address, key_type, fingerprint, public_key)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (server_id, address, key_type) DO UPDATE SET last_seen = now()
			WHERE host_keys.fingerprint = EXCLUDED.fingerprint
		RETURNING true`, serverID, address, p.KeyType, p.Fingerprint, p.Key).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		var have string
		_ = h.s.pool.QueryRow(ctx, `SELECT fingerprint FROM host_keys WHERE server_id = $1 AND address = $2 AND key_type = $3`,
			serverID, address, p.KeyType).Scan(&have)
		return fmt.Errorf("store: server %s at %s: %w (%s %s, offered %s)", serverID, address, sshpin.ErrConflict,
			p.KeyType, have, p.Fingerprint)
	}
	if err != nil {
		return fmt.Errorf("store: pinning the host key of %s/%s: %w", serverID, address, err)
	}
	return nil
}

// Replace drops the pins of a server address and pins pins instead (none:
// the next contact pins afresh).
func (h *HostKeyPins) Replace(ctx context.Context, serverID, address string, pins []sshpin.Pin) error {
	if serverID == "" || address == "" {
		return errors.New("store: host key pins need a server id and an address")
	}
	seen := map[string]bool{}
	for _, p := range pins {
		if err := checkPin(serverID, address, p); err != nil {
			return err
		}
		if seen[p.KeyType] {
			return fmt.Errorf("store: two %s keys for %s/%s: one pin per key type", p.KeyType, serverID, address)
		}
		seen[p.KeyType] = true
	}
	return inTx(ctx, h.s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM host_keys WHERE server_id = $1 AND address = $2`, serverID, address); err != nil {
			return fmt.Errorf("store: replacing the host keys of %s/%s: %w", serverID, address, err)
		}
		for _, p := range pins {
			if _, err := tx.Exec(ctx, `INSERT INTO host_keys (server_id, address, key_type, fingerprint, public_key)
				VALUES ($1, $2, $3, $4, $5)`, serverID, address, p.KeyType, p.Fingerprint, p.Key); err != nil {
				return fmt.Errorf("store: replacing the host keys of %s/%s: %w", serverID, address, err)
			}
		}
		return nil
	})
}

// HostKeyPin is a stored pin with its server and address.
type HostKeyPin struct {
	ServerID string
	Address  string
	sshpin.Pin
}

// ListHostKeys returns the pins of the given servers (all servers when none
// is given), by server, address and key type.
func (s *Store) ListHostKeys(ctx context.Context, serverIDs ...string) ([]HostKeyPin, error) {
	q := `SELECT server_id, address, key_type, fingerprint, public_key, first_seen, last_seen FROM host_keys`
	var args []any
	if len(serverIDs) > 0 {
		q += ` WHERE server_id = ANY($1)`
		args = append(args, serverIDs)
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY server_id, address, key_type`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: host keys: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (HostKeyPin, error) {
		var p HostKeyPin
		err := r.Scan(&p.ServerID, &p.Address, &p.KeyType, &p.Fingerprint, &p.Key, &p.FirstSeen, &p.LastSeen)
		return p, err
	})
}

// DeleteHostKeys forgets every pin of the given servers (terminate, or a
// heal that replaced them) and returns how many pins went.
func (s *Store) DeleteHostKeys(ctx context.Context, serverIDs ...string) (int64, error) {
	ids := make([]string, 0, len(serverIDs))
	for _, id := range serverIDs {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM host_keys WHERE server_id = ANY($1)`, ids)
	if err != nil {
		return 0, fmt.Errorf("store: deleting host keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
