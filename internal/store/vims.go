package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// VIM types.
const (
	VimOpenStack  = "openstack"
	VimKubernetes = "kubernetes"
)

// Vim is a registered VIM with its credentials (VimAuth). Secret values in
// Extra and Auth.AuthCred are sealed by the caller (the lcm package) before
// they get here; the store never sees plaintext credentials.
type Vim struct {
	ID            string
	Seq           int64
	Name          string
	Description   string
	TenantID      string
	Type          string
	AuthURL       string
	VimProject    map[string]any
	PlacementAttr map[string]any
	Shared        bool
	IsDefault     bool
	Status        string
	Extra         map[string]any
	Auth          VimAuth
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// VimAuth is a VIM's row in vim_auths.
type VimAuth struct {
	AuthURL    string
	VimProject map[string]any
	AuthCred   map[string]any // sealed values
	KeyID      string         // id of the secrets key that sealed AuthCred
}

// VimFilter selects VIMs; empty fields match everything, several values of
// one field match any of them (the legacy API's ?id=a&id=b).
type VimFilter struct {
	IDs   []string
	Names []string
	Types []string
}

const vimCols = `v.id, v.seq, v.name, v.description, v.tenant_id, v.type, v.auth_url, v.vim_project,
	v.placement_attr, v.shared, v.is_default, v.status, v.extra, v.created_at, v.updated_at,
	a.auth_url, a.vim_project, a.auth_cred, a.key_id`

const vimFrom = ` FROM vims v JOIN vim_auths a ON a.vim_id = v.id`

func scanVim(row pgx.Row) (*Vim, error) {
	var (
		v                         Vim
		project, placement, extra []byte
		authProject, authCred     []byte
		authURL, keyID            *string
	)
	err := row.Scan(&v.ID, &v.Seq, &v.Name, &v.Description, &v.TenantID, &v.Type, &v.AuthURL, &project,
		&placement, &v.Shared, &v.IsDefault, &v.Status, &extra, &v.CreatedAt, &v.UpdatedAt,
		&authURL, &authProject, &authCred, &keyID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	v.Auth.AuthURL, v.Auth.KeyID = deref(authURL), deref(keyID)
	for _, f := range []struct {
		raw []byte
		dst *map[string]any
	}{{project, &v.VimProject}, {placement, &v.PlacementAttr}, {extra, &v.Extra}, {authProject, &v.Auth.VimProject}, {authCred, &v.Auth.AuthCred}} {
		if len(f.raw) > 0 {
			if err := json.Unmarshal(f.raw, f.dst); err != nil {
				return nil, fmt.Errorf("store: vim %s: %w", v.ID, err)
			}
		}
		if *f.dst == nil {
			*f.dst = map[string]any{}
		}
	}
	return &v, nil
}

// vimJSON encodes the JSON columns of a VIM: vim_project, placement_attr,
// extra, and vim_auths' vim_project and auth_cred.
func vimJSON(v *Vim) ([5][]byte, error) {
	var out [5][]byte
	for i, m := range []map[string]any{v.VimProject, v.PlacementAttr, v.Extra, v.Auth.VimProject, v.Auth.AuthCred} {
		if m == nil {
			m = map[string]any{}
		}
		b, err := json.Marshal(m)
		if err != nil {
			return out, fmt.Errorf("store: vim %s: %w", v.ID, err)
		}
		out[i] = b
	}
	return out, nil
}

// vimConflict turns unique violations into ConflictErrors naming what clashes.
func (s *Store) vimConflict(ctx context.Context, err error, v *Vim) error {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != "23505" {
		return err
	}
	switch pg.ConstraintName {
	case "vims_name":
		return &ConflictError{Reason: fmt.Sprintf("a VIM named %q already exists; choose another name or update that VIM", v.Name)}
	case "vims_one_default":
		var id, name string
		if e := s.pool.QueryRow(ctx, `SELECT id::text, name FROM vims WHERE is_default`).Scan(&id, &name); e != nil {
			return &ConflictError{Reason: "another VIM is already the default; unset it first (is_default false)"}
		}
		return &ConflictError{Reason: fmt.Sprintf("VIM %q (%s) is already the default; unset it first: openstack vim set --is-default False %s", name, id, id)}
	case "vims_pkey":
		return &ConflictError{Reason: fmt.Sprintf("a VIM with id %s already exists", v.ID)}
	}
	return err
}

// CreateVim inserts a VIM and its VimAuth in one transaction.
func (s *Store) CreateVim(ctx context.Context, v *Vim) (*Vim, error) {
	var out *Vim
	cols, err := vimJSON(v)
	if err != nil {
		return nil, err
	}
	err = inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO vims (id, name, description, tenant_id, type, auth_url, vim_project,
			placement_attr, shared, is_default, status, extra) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`,
			v.ID, v.Name, v.Description, v.TenantID, v.Type, v.AuthURL, cols[0], cols[1], v.Shared, v.IsDefault,
			v.Status, cols[2]); err != nil {
			return s.vimConflict(ctx, err, v)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO vim_auths (vim_id, auth_url, vim_project, auth_cred, key_id)
			VALUES ($1,$2,$3,$4,$5)`, v.ID, v.Auth.AuthURL, cols[3], cols[4], v.Auth.KeyID); err != nil {
			return err
		}
		var err error
		out, err = scanVim(tx.QueryRow(ctx, `SELECT `+vimCols+vimFrom+` WHERE v.id = $1`, v.ID))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetVim reads one VIM by id.
func (s *Store) GetVim(ctx context.Context, id string) (*Vim, error) {
	return scanVim(s.pool.QueryRow(ctx, `SELECT `+vimCols+vimFrom+` WHERE v.id::text = $1`, id))
}

// GetVimByName reads one VIM by its (unique) name.
func (s *Store) GetVimByName(ctx context.Context, name string) (*Vim, error) {
	return scanVim(s.pool.QueryRow(ctx, `SELECT `+vimCols+vimFrom+` WHERE v.name = $1`, name))
}

// DefaultVim returns the default VIM, or ErrNotFound when there is none.
func (s *Store) DefaultVim(ctx context.Context) (*Vim, error) {
	return scanVim(s.pool.QueryRow(ctx, `SELECT `+vimCols+vimFrom+` WHERE v.is_default`))
}

// ListVims returns the VIMs matching f in registration order.
func (s *Store) ListVims(ctx context.Context, f VimFilter) ([]*Vim, error) {
	var where []string
	var args []any
	for _, c := range []struct {
		col  string
		vals []string
	}{{"v.id::text", f.IDs}, {"v.name", f.Names}, {"v.type", f.Types}} {
		if len(c.vals) == 0 {
			continue
		}
		args = append(args, c.vals)
		where = append(where, fmt.Sprintf("%s = ANY($%d)", c.col, len(args)))
	}
	q := `SELECT ` + vimCols + vimFrom
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY v.seq`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Vim{}
	for rows.Next() {
		v, err := scanVim(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// UpdateVim changes a VIM under a row lock: change gets the current VIM and
// edits it in place; its error aborts the update and is returned as is.
// Id, type and creation time cannot change.
func (s *Store) UpdateVim(ctx context.Context, id string, change func(*Vim) error) (*Vim, error) {
	var out *Vim
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		v, err := scanVim(tx.QueryRow(ctx, `SELECT `+vimCols+vimFrom+` WHERE v.id::text = $1 FOR UPDATE OF v, a`, id))
		if err != nil {
			return err
		}
		if err := change(v); err != nil {
			return err
		}
		cols, err := vimJSON(v)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE vims SET name=$2, description=$3, tenant_id=$4, auth_url=$5, vim_project=$6,
			placement_attr=$7, shared=$8, is_default=$9, status=$10, extra=$11, updated_at=now() WHERE id=$1`,
			v.ID, v.Name, v.Description, v.TenantID, v.AuthURL, cols[0], cols[1], v.Shared, v.IsDefault, v.Status, cols[2]); err != nil {
			return s.vimConflict(ctx, err, v)
		}
		if _, err := tx.Exec(ctx, `UPDATE vim_auths SET auth_url=$2, vim_project=$3, auth_cred=$4, key_id=$5 WHERE vim_id=$1`,
			v.ID, v.Auth.AuthURL, cols[3], cols[4], v.Auth.KeyID); err != nil {
			return err
		}
		out, err = scanVim(tx.QueryRow(ctx, `SELECT `+vimCols+vimFrom+` WHERE v.id = $1`, v.ID))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// VimUsers lists the VNF instances whose vimConnectionInfo names the VIM,
// and the unfinished operation occurrences whose request names it.
func (s *Store) VimUsers(ctx context.Context, id string) (instances, ops []string, err error) {
	return vimUsers(ctx, s.pool, id)
}

func vimUsers(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, id string) (instances, ops []string, err error) {
	ref, _ := json.Marshal([]map[string]string{{"vimId": id}})
	collect := func(sql string) ([]string, error) {
		rows, err := q.Query(ctx, sql, ref)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[string])
	}
	instances, err = collect(`SELECT id::text FROM vnf_instances WHERE vim_connection_info @> $1 ORDER BY seq`)
	if err != nil {
		return nil, nil, err
	}
	ops, err = collect(`SELECT id::text FROM vnf_lcm_op_occs
		WHERE stage IN ` + activeStages + `
		AND operation_params -> 'vimConnectionInfo' @> $1 ORDER BY seq`)
	if err != nil {
		return nil, nil, err
	}
	return instances, ops, nil
}

// DeleteVim deletes a VIM and its VimAuth. It returns a *ConflictError naming
// the users while any VNF instance (other than those in except) or unfinished
// operation occurrence refers to the VIM by vimId, and ErrNotFound when the
// VIM does not exist.
func (s *Store) DeleteVim(ctx context.Context, id string, except ...string) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var name string
		err := tx.QueryRow(ctx, `SELECT name FROM vims WHERE id::text = $1 FOR UPDATE`, id).Scan(&name)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		insts, ops, err := vimUsers(ctx, tx, id)
		if err != nil {
			return err
		}
		insts = without(insts, except)
		var reasons []string
		if len(insts) > 0 {
			reasons = append(reasons, fmt.Sprintf("VNF instance(s) %s refer to it in vimConnectionInfo; terminate and delete them, or give them another VIM, first", strings.Join(insts, ", ")))
		}
		if len(ops) > 0 {
			reasons = append(reasons, fmt.Sprintf("unfinished LCM operation(s) %s name it; let them finish or fail them first", strings.Join(ops, ", ")))
		}
		if len(reasons) > 0 {
			return &ConflictError{State: "IN_USE", Reason: fmt.Sprintf("VIM %q (%s) is in use: %s", name, id, strings.Join(reasons, "; "))}
		}
		_, err = tx.Exec(ctx, `DELETE FROM vims WHERE id::text = $1`, id)
		return err
	})
}

func without(list, drop []string) []string {
	out := list[:0:0]
	for _, s := range list {
		keep := true
		for _, d := range drop {
			if strings.EqualFold(s, d) {
				keep = false
			}
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}
