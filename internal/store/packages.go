package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// PutPackage inserts or replaces an onboarded package row (used by onboarding
// and, until the packages API exists, by tests and fixtures).
func (s *Store) PutPackage(ctx context.Context, p *model.Package) error {
	if p.Vnfd == nil {
		return errors.New("store: package without VNFD")
	}
	vnfd, err := json.Marshal(p.Vnfd)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO vnf_packages (id, vnfd_id, onboarding_state, operational_state, usage_state, vnfd)
		VALUES ($1,$2,$3,$4,$5,$6)
		ON CONFLICT (id) DO UPDATE SET vnfd_id=EXCLUDED.vnfd_id, onboarding_state=EXCLUDED.onboarding_state,
			operational_state=EXCLUDED.operational_state, usage_state=EXCLUDED.usage_state, vnfd=EXCLUDED.vnfd`,
		p.ID, p.Vnfd.ID, p.OnboardingState, p.OperationalState, p.UsageState, vnfd)
	return err
}

// PackageByVnfdID finds the package that carries a VNFD.
func (s *Store) PackageByVnfdID(ctx context.Context, vnfdID string) (*model.Package, error) {
	var (
		p   model.Package
		raw []byte
	)
	err := s.pool.QueryRow(ctx, `SELECT id, onboarding_state, operational_state, usage_state, vnfd
		FROM vnf_packages WHERE vnfd_id=$1`, vnfdID).Scan(&p.ID, &p.OnboardingState, &p.OperationalState, &p.UsageState, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &p.Vnfd); err != nil {
			return nil, fmt.Errorf("store: package %s VNFD: %w", p.ID, err)
		}
	}
	return &p, nil
}
