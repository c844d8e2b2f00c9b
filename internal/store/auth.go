package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// AuthClient is a registered OAuth 2.0 client (internal/auth). The store
// keeps only the SHA-256 of its secret.
type AuthClient struct {
	ID           string
	SecretSHA256 []byte
	Scopes       []string
	Description  string
	CreatedAt    time.Time
	// ActiveTokens counts unexpired access tokens (AuthClients only).
	ActiveTokens int
}

// AuthToken is an issued access token, known by the SHA-256 of its value.
type AuthToken struct {
	SHA256    []byte
	ClientID  string
	Scopes    []string
	IssuedAt  time.Time
	ExpiresAt time.Time
}

// ErrAuthClientExists is returned when a client id is taken.
var ErrAuthClientExists = errors.New("an OAuth client with this id exists")

// CreateAuthClient registers a client.
func (s *Store) CreateAuthClient(ctx context.Context, c *AuthClient) error {
	err := s.pool.QueryRow(ctx, `INSERT INTO auth_clients (id, secret_sha256, scopes, description)
		VALUES ($1, $2, $3, $4) RETURNING created_at`, c.ID, c.SecretSHA256, c.Scopes, c.Description).Scan(&c.CreatedAt)
	if isUniqueViolation(err) {
		return ErrAuthClientExists
	}
	if err != nil {
		return fmt.Errorf("store: create auth client: %w", err)
	}
	return nil
}

// GetAuthClient reads a client; ErrNotFound if there is none.
func (s *Store) GetAuthClient(ctx context.Context, id string) (*AuthClient, error) {
	c := &AuthClient{}
	err := s.pool.QueryRow(ctx, `SELECT id, secret_sha256, scopes, description, created_at FROM auth_clients WHERE id = $1`, id).
		Scan(&c.ID, &c.SecretSHA256, &c.Scopes, &c.Description, &c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: auth client: %w", err)
	}
	return c, nil
}

// ListAuthClients returns every client (without secret hashes), by id.
func (s *Store) ListAuthClients(ctx context.Context) ([]AuthClient, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.id, c.scopes, c.description, c.created_at,
		(SELECT count(*) FROM auth_tokens t WHERE t.client_id = c.id AND t.expires_at > now())
		FROM auth_clients c ORDER BY c.id`)
	if err != nil {
		return nil, fmt.Errorf("store: auth clients: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuthClient, error) {
		var c AuthClient
		err := r.Scan(&c.ID, &c.Scopes, &c.Description, &c.CreatedAt, &c.ActiveTokens)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: auth clients: %w", err)
	}
	return out, nil
}

// DeleteAuthClient removes a client and every token issued to it;
// ErrNotFound if there is none.
func (s *Store) DeleteAuthClient(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM auth_clients WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("store: delete auth client: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// CreateAuthToken stores a token issued to clientID, valid for ttl from the
// database's clock (one clock for every replica). ErrNotFound if the client
// no longer exists. Tokens that expired over an hour ago are purged.
func (s *Store) CreateAuthToken(ctx context.Context, sum []byte, clientID string, scopes []string, ttl time.Duration) (*AuthToken, error) {
	t := &AuthToken{SHA256: sum, ClientID: clientID, Scopes: scopes}
	err := s.pool.QueryRow(ctx, `INSERT INTO auth_tokens (token_sha256, client_id, scopes, issued_at, expires_at)
		SELECT $1, id, $3, now(), now() + $4 * interval '1 microsecond' FROM auth_clients WHERE id = $2
		RETURNING issued_at, expires_at`, sum, clientID, scopes, ttl.Microseconds()).Scan(&t.IssuedAt, &t.ExpiresAt)
	var pg *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || (errors.As(err, &pg) && pg.Code == "23503") {
		return nil, ErrNotFound // deleted meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("store: create auth token: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM auth_tokens WHERE expires_at < now() - interval '1 hour'`); err != nil {
		s.log.Warn("purging expired access tokens", "err", err)
	}
	return t, nil
}

// GetAuthToken returns an unexpired token by the SHA-256 of its value;
// ErrNotFound if it is unknown, expired, or its client was deleted.
func (s *Store) GetAuthToken(ctx context.Context, sum []byte) (*AuthToken, error) {
	t := &AuthToken{SHA256: sum}
	err := s.pool.QueryRow(ctx, `SELECT client_id, scopes, issued_at, expires_at FROM auth_tokens
		WHERE token_sha256 = $1 AND expires_at > now()`, sum).Scan(&t.ClientID, &t.Scopes, &t.IssuedAt, &t.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: auth token: %w", err)
	}
	return t, nil
}
