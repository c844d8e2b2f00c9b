package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// vnfdCache keeps each package's decoded VNFD, keyed by the package id and
// the version of its row (PostgreSQL's xmin: the transaction that wrote the
// row version being read). Every LCM request and every run needs the VNFD;
// decoding it each time was most of their JSON work. A package's VNFD does
// not change once onboarded, but the cache does not depend on that: any
// write to the package row — a state change, PutPackage replacing the VNFD —
// makes a row version with another xmin, and the next read decodes again.
// The states (onboarding, operational) are never cached: they come with
// every read.
//
// The decoded VNFD is shared by every reader: it is read-only.
type vnfdCache struct {
	mu     sync.Mutex
	m      map[string]vnfdEntry // package id → VNFD of one row version
	byVnfd map[string]string    // vnfdId → package id, for the entries of m
}

type vnfdEntry struct {
	xmin string
	vnfd *model.Vnfd
}

// vnfdCacheMax bounds the cache; past it, it starts again empty (packages
// are few; deleted ones leave entries behind).
const vnfdCacheMax = 1024

func (c *vnfdCache) get(pkgID, xmin string) (*model.Vnfd, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[pkgID]
	if !ok || e.xmin != xmin {
		return nil, false
	}
	return e.vnfd, true
}

func (c *vnfdCache) put(pkgID, xmin string, v *model.Vnfd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= vnfdCacheMax {
		c.m, c.byVnfd = map[string]vnfdEntry{}, map[string]string{}
	}
	c.m[pkgID] = vnfdEntry{xmin: xmin, vnfd: v}
	if v != nil {
		c.byVnfd[v.ID] = pkgID
	}
}

// version is the package id and row version cached for a vnfdId ("": none).
func (c *vnfdCache) version(vnfdID string) (pkgID, xmin string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pkgID = c.byVnfd[vnfdID]
	if e, ok := c.m[pkgID]; ok && e.vnfd != nil && e.vnfd.ID == vnfdID {
		return pkgID, e.xmin
	}
	return "", ""
}

// decode returns the VNFD of the package row version xmin: from the cache,
// or decoded from raw and kept. raw nil (not read) on a miss: ok is false.
func (c *vnfdCache) decode(pkgID, xmin string, raw []byte) (v *model.Vnfd, ok bool, err error) {
	if v, ok := c.get(pkgID, xmin); ok {
		return v, true, nil
	}
	if raw == nil {
		return nil, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false, fmt.Errorf("store: package %s VNFD: %w", pkgID, err)
	}
	c.put(pkgID, xmin, v)
	return v, true, nil
}

// packageVnfd reads the VNFD of a package (and the version it belongs to)
// when the cache did not have the version read with the package's states.
func (s *Store) packageVnfd(ctx context.Context, pkgID string) (*model.Vnfd, error) {
	var (
		xmin string
		raw  []byte
	)
	err := s.pool.QueryRow(ctx, `SELECT xmin::text, vnfd FROM vnf_packages WHERE id=$1`, pkgID).Scan(&xmin, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, nil
	}
	v, _, err := s.vnfds.decode(pkgID, xmin, raw)
	return v, err
}

// PackageByVnfdID finds the package that carries a VNFD: its id, states and
// VNFD (read-only, shared: see vnfdCache). UsageState is not read.
func (s *Store) PackageByVnfdID(ctx context.Context, vnfdID string) (*model.Package, error) {
	var (
		p          model.Package
		xmin, seen string
		raw        []byte
	)
	p.ID, seen = s.vnfds.version(vnfdID)
	// The VNFD comes back only when the cache does not hold this version.
	err := s.pool.QueryRow(ctx, `SELECT id::text, onboarding_state, operational_state, xmin::text,
		CASE WHEN id::text = $2 AND xmin::text = $3 THEN NULL ELSE vnfd END
		FROM vnf_packages WHERE vnfd_id=$1`, vnfdID, p.ID, seen).Scan(&p.ID, &p.OnboardingState, &p.OperationalState, &xmin, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	v, ok, err := s.vnfds.decode(p.ID, xmin, raw)
	if err != nil {
		return nil, err
	}
	if !ok { // NULL: no VNFD, or the cached version was dropped meanwhile
		if v, err = s.packageVnfd(ctx, p.ID); err != nil {
			return nil, err
		}
	}
	p.Vnfd = v
	return &p, nil
}

// InstanceAndPackage reads an instance and the package that carries its
// VNFD (nil: none does) in one round trip; the package's VNFD is read-only
// and shared (see vnfdCache).
func (s *Store) InstanceAndPackage(ctx context.Context, id string) (*Instance, *model.Package, error) {
	r, err := s.OpenInstanceAndPackage(ctx, id, nil)
	if err != nil {
		return nil, nil, err
	}
	return r.Instance, r.Package, nil
}

// InstancePackage is an instance read with its package.
type InstancePackage struct {
	*Instance
	// Docs are the instance's jsonb attributes as decoded (sealed values
	// opened when read with an Opener), for secrets.ValuesJSON.
	Docs [][]byte
	// Package carries the instance's VNFD (nil: no package does).
	Package *model.Package

	// Instantiation, read with the instance when asked (OpenForOp's
	// instantiation), is what the instance's last completed instantiation
	// left: nil when it has none.
	Instantiation *Instantiation

	// targets are the subscriptions, read with the instance when
	// withTargets (OpenForOp): what creating an operation from this read
	// notifies.
	targets     []target
	withTargets bool
}

// Instantiation is the instance's last completed instantiation, as an
// operation after it needs it.
type Instantiation struct {
	OpID string
	// DriverParams are the management drivers' parameters it accepted
	// (sealed JSON at OpPlace(OpID, "driver_params"); nil: none).
	DriverParams []byte
}

// OpenInstanceAndPackage is InstanceAndPackage that, with open, returns the
// instance with its sealed values opened (see scanInstanceOpen).
func (s *Store) OpenInstanceAndPackage(ctx context.Context, id string, open Opener) (*InstancePackage, error) {
	var r instanceRow
	if err := r.scan(s.pool.QueryRow(ctx, selectInstanceAndPackage, id), false); err != nil {
		return nil, err
	}
	return s.instancePackage(ctx, &r, open, nil, false)
}

// selectInstanceAndPackage reads an instance and its package's id, states and xmin.
const selectInstanceAndPackage = `SELECT i.*, p.id::text, p.onboarding_state, p.operational_state, p.xmin::text ` + instanceAndPackage

// instanceAndPackage is the instance $1 and its package, joined.
const instanceAndPackage = `FROM (SELECT ` + instanceCols + ` FROM vnf_instances WHERE id=$1) i
		LEFT JOIN vnf_packages p ON p.vnfd_id = i.vnfd_id`

// selectInstancePackageAndInstantiation is selectInstanceAndPackage with
// the id and drivers' parameters of the instance's last completed
// instantiation (one probe of vnf_lcm_op_occs_instantiated), which an
// operation after it starts from: a statement and a round trip fewer than
// reading them apart.
const selectInstancePackageAndInstantiation = `SELECT i.*, p.id::text, p.onboarding_state, p.operational_state, p.xmin::text,
		d.id::text, d.driver_params ` + instanceAndPackage + `
		LEFT JOIN LATERAL (SELECT id, driver_params FROM vnf_lcm_op_occs
			WHERE vnf_instance_id=$1 AND operation='INSTANTIATE' AND stage='COMPLETED'
			ORDER BY seq DESC LIMIT 1) d ON true`

// instanceRow is a row of selectInstanceAndPackage (or of
// selectInstancePackageAndInstantiation), not yet opened.
type instanceRow struct {
	in                           *Instance
	docs                         [][]byte
	pkgID, onb, op, xmin, instOp *string
	instParams                   []byte
}

// scan reads the row (with the last instantiation's columns when
// instantiation); no row is ErrNotFound.
func (r *instanceRow) scan(row pgx.Row, instantiation bool) error {
	extra := []any{&r.pkgID, &r.onb, &r.op, &r.xmin}
	if instantiation {
		extra = append(extra, &r.instOp, &r.instParams)
	}
	var err error
	r.in, r.docs, err = scanInstanceRaw(extraRow{row, extra})
	return err
}

// instancePackage opens and decodes a row (instanceRow.scan).
func (s *Store) instancePackage(ctx context.Context, row *instanceRow, open Opener, targets []target, withTargets bool) (*InstancePackage, error) {
	if err := openDocs(row.in, row.docs, open); err != nil {
		return nil, err
	}
	r := &InstancePackage{Instance: row.in, Docs: row.docs, targets: targets, withTargets: withTargets}
	if row.instOp != nil {
		r.Instantiation = &Instantiation{OpID: *row.instOp, DriverParams: row.instParams}
	}
	if row.pkgID == nil {
		return r, nil
	}
	p := &model.Package{ID: *row.pkgID, OnboardingState: deref(row.onb), OperationalState: deref(row.op)}
	v, ok, _ := s.vnfds.decode(p.ID, deref(row.xmin), nil)
	if !ok {
		var err error
		v, err = s.packageVnfd(ctx, p.ID)
		if errors.Is(err, ErrNotFound) { // deleted since
			return r, nil
		}
		if err != nil {
			return nil, err
		}
	}
	p.Vnfd = v
	r.Package = p
	return r, nil
}

// extraRow scans trailing extra columns after a row's usual ones.
type extraRow struct {
	pgx.Row
	extra []any
}

func (r extraRow) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }
