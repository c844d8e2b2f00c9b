package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// VnfPackage is a stored VNF package (SOL005 VnfPkgInfo plus onboarding state).
type VnfPackage struct {
	ID                  string
	Seq                 int64
	VnfdID              string
	VnfProvider         string
	VnfProductName      string
	VnfSoftwareVersion  string
	VnfdVersion         string
	OnboardingState     string
	OperationalState    string
	UsageState          string
	Checksum            map[string]any
	SoftwareImages      []map[string]any
	AdditionalArtifacts []map[string]any
	VnfdFiles           []string
	UserDefinedData     map[string]any
	OnboardingFailure   *model.ProblemDetails
	Vnfd                *model.Vnfd
	Source              []byte // sealed upload_from_uri request
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// Onboarding states (SOL005 PackageOnboardingStateType).
const (
	PkgCreated    = "CREATED"
	PkgUploading  = "UPLOADING"
	PkgProcessing = "PROCESSING"
)

const pkgCols = `id, seq, vnfd_id, vnf_provider, vnf_product_name, vnf_software_version, vnfd_version,
	onboarding_state, operational_state, usage_state, checksum, software_images, additional_artifacts,
	vnfd_files, user_defined_data, onboarding_failure, vnfd, source, created_at, updated_at`

func scanPackage(row pgx.Row) (*VnfPackage, error) {
	var (
		p                                       VnfPackage
		vnfdID, prov, prod, sw, ver             *string
		sum, imgs, arts, files, udd, fail, vnfd []byte
	)
	err := row.Scan(&p.ID, &p.Seq, &vnfdID, &prov, &prod, &sw, &ver, &p.OnboardingState, &p.OperationalState,
		&p.UsageState, &sum, &imgs, &arts, &files, &udd, &fail, &vnfd, &p.Source, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	p.VnfdID, p.VnfProvider, p.VnfProductName, p.VnfSoftwareVersion, p.VnfdVersion = deref(vnfdID), deref(prov), deref(prod), deref(sw), deref(ver)
	for _, f := range []struct {
		raw []byte
		dst any
	}{{sum, &p.Checksum}, {imgs, &p.SoftwareImages}, {arts, &p.AdditionalArtifacts}, {files, &p.VnfdFiles}, {udd, &p.UserDefinedData}, {fail, &p.OnboardingFailure}, {vnfd, &p.Vnfd}} {
		if len(f.raw) > 0 {
			if err := json.Unmarshal(f.raw, f.dst); err != nil {
				return nil, fmt.Errorf("store: package %s: %w", p.ID, err)
			}
		}
	}
	return &p, nil
}

// CreatePackage creates a package resource in CREATED / DISABLED.
func (s *Store) CreatePackage(ctx context.Context, id string, userDefinedData map[string]any) (*VnfPackage, error) {
	udd, err := jsonOrNull(userDefinedData)
	if err != nil {
		return nil, err
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO vnf_packages (id, user_defined_data) VALUES ($1, $2)`, id, udd); err != nil {
		return nil, err
	}
	return s.GetPackage(ctx, id)
}

// GetPackage reads one package.
func (s *Store) GetPackage(ctx context.Context, id string) (*VnfPackage, error) {
	return scanPackage(s.pool.QueryRow(ctx, `SELECT `+pkgCols+` FROM vnf_packages_doc WHERE id=$1`, id))
}

var packageFilterCols = map[string]string{
	"id":                 "id::text",
	"vnfdId":             "vnfd_id",
	"vnfProvider":        "vnf_provider",
	"vnfProductName":     "vnf_product_name",
	"vnfSoftwareVersion": "vnf_software_version",
	"vnfdVersion":        "vnfd_version",
	"onboardingState":    "onboarding_state",
	"operationalState":   "operational_state",
}

// ListPackages returns one page of packages and whether more rows follow.
func (s *Store) ListPackages(ctx context.Context, p Page) ([]*VnfPackage, bool, error) {
	return listPage(ctx, s, "vnf_packages_doc", pkgCols, packageFilterCols, nil, p, scanPackage)
}

// PackageUpdate is a PATCH of a package.
type PackageUpdate struct {
	OperationalState string         // "" = unchanged
	UserDefinedData  map[string]any // merged (RFC 7396: null deletes a key)
}

// UpdatePackage changes the operational state and/or user defined data.
func (s *Store) UpdatePackage(ctx context.Context, id string, u PackageUpdate) (*VnfPackage, error) {
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		p, err := scanPackage(tx.QueryRow(ctx, `SELECT `+pkgCols+` FROM vnf_packages_doc WHERE id=$1`, id))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM vnf_packages WHERE id=$1 FOR UPDATE`, id); err != nil {
			return err
		}
		if u.OperationalState != "" {
			if p.OnboardingState != model.Onboarded {
				return &ConflictError{State: p.OnboardingState, Reason: fmt.Sprintf(
					"VNF package %s is %s; only an ONBOARDED package can be enabled or disabled", id, p.OnboardingState)}
			}
			if p.OperationalState == u.OperationalState {
				return &ConflictError{State: p.OperationalState, Reason: fmt.Sprintf(
					"VNF package %s is already %s", id, p.OperationalState)}
			}
		}
		udd := p.UserDefinedData
		if u.UserDefinedData != nil {
			udd = MergePatch(udd, u.UserDefinedData)
		}
		raw, err := jsonOrNull(udd)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE vnf_packages SET operational_state=COALESCE(NULLIF($2,''), operational_state),
			user_defined_data=$3, updated_at=now() WHERE id=$1`, id, u.OperationalState, raw)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.GetPackage(ctx, id)
}

// MergePatch applies RFC 7396 to a key/value object: null deletes a key.
func MergePatch(dst, patch map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(patch))
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			cur, _ := out[k].(map[string]any)
			out[k] = MergePatch(cur, pv)
		default:
			out[k] = v
		}
	}
	return out
}

// DeletePackage deletes a DISABLED package no instance uses.
func (s *Store) DeletePackage(ctx context.Context, id string) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var op string
		err := tx.QueryRow(ctx, `SELECT operational_state FROM vnf_packages WHERE id=$1 FOR UPDATE`, id).Scan(&op)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if op != model.Disabled {
			return &ConflictError{State: op, Reason: fmt.Sprintf(
				"VNF package %s is %s; disable it first (PATCH /vnfpkgm/v1/vnf_packages/%s {\"operationalState\":\"DISABLED\"})", id, op, id)}
		}
		var users []string
		rows, err := tx.Query(ctx, `SELECT id::text FROM vnf_instances WHERE vnf_pkg_id=$1 ORDER BY seq LIMIT 5`, id)
		if err != nil {
			return err
		}
		for rows.Next() {
			var u string
			if err := rows.Scan(&u); err != nil {
				rows.Close()
				return err
			}
			users = append(users, u)
		}
		rows.Close()
		if len(users) > 0 {
			return &ConflictError{State: model.InUse, Reason: fmt.Sprintf(
				"VNF package %s is IN_USE by VNF instance(s) %v; delete those instances first", id, users)}
		}
		_, err = tx.Exec(ctx, `DELETE FROM vnf_packages WHERE id=$1`, id)
		return err
	})
}

// Content is a CSAR to store: Size bytes read from R, whose SHA-256 (hex)
// is SHA256. It is copied into the database in chunks, never held whole.
type Content struct {
	R      io.Reader
	Size   int64
	SHA256 string
}

// ContentChunk is the size of the chunks package content is stored in.
const ContentChunk = 1 << 20

// StartOnboarding moves a CREATED package to UPLOADING (content nil: it is
// fetched later from source) or PROCESSING (content given), under a lease.
func (s *Store) StartOnboarding(ctx context.Context, id, owner string, lease time.Duration, content *Content, source []byte) (*VnfPackage, error) {
	state := PkgProcessing
	if content == nil {
		state = PkgUploading
	}
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE vnf_packages SET onboarding_state=$2, onboarding_owner=$3,
			onboarding_until=now()+$4::interval, onboarding_failure=NULL, source=$5, updated_at=now()
			WHERE id=$1 AND onboarding_state='CREATED'`, id, state, owner, lease.String(), source)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var cur string
			err := tx.QueryRow(ctx, `SELECT onboarding_state FROM vnf_packages WHERE id=$1`, id).Scan(&cur)
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			if err != nil {
				return err
			}
			return notCreated(id, cur)
		}
		if content != nil {
			return putContent(ctx, tx, id, content)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.GetPackage(ctx, id)
}

func notCreated(id, state string) error {
	return &ConflictError{State: state, Reason: fmt.Sprintf(
		"VNF package %s is %s; content can only be uploaded once, to a package in CREATED (create a new package for another CSAR)", id, state)}
}

// CheckUploadable reports (as StartOnboarding would) whether content may be
// uploaded to the package now, before a client sends it.
func (s *Store) CheckUploadable(ctx context.Context, id string) error {
	var cur string
	err := s.pool.QueryRow(ctx, `SELECT onboarding_state FROM vnf_packages WHERE id=$1`, id).Scan(&cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return err
	case cur != PkgCreated:
		return notCreated(id, cur)
	}
	return nil
}

// putContent stores content in chunks with COPY, streaming from its reader.
func putContent(ctx context.Context, tx pgx.Tx, id string, c *Content) error {
	if _, err := tx.Exec(ctx, `DELETE FROM vnf_package_contents WHERE package_id=$1`, id); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO vnf_package_contents (package_id, content, size, sha256) VALUES ($1,NULL,$2,$3)`,
		id, c.Size, c.SHA256); err != nil {
		return err
	}
	src := &chunkSource{id: id, r: io.LimitReader(c.R, c.Size), buf: make([]byte, ContentChunk)}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"vnf_package_chunks"}, []string{"package_id", "idx", "data"}, src)
	if err != nil {
		return err
	}
	if src.err != nil {
		return src.err
	}
	if src.total != c.Size {
		return fmt.Errorf("store: package content: read %d bytes of %d (%d chunks)", src.total, c.Size, n)
	}
	return nil
}

// chunkSource feeds COPY one chunk at a time.
type chunkSource struct {
	id    string
	r     io.Reader
	buf   []byte
	idx   int
	n     int
	total int64
	err   error
}

func (c *chunkSource) Next() bool {
	if c.err != nil {
		return false
	}
	n, err := io.ReadFull(c.r, c.buf)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil {
		c.err = fmt.Errorf("store: reading package content: %w", err)
		return false
	}
	if n == 0 {
		return false
	}
	c.n, c.total = n, c.total+int64(n)
	c.idx++
	return true
}

func (c *chunkSource) Values() ([]any, error) {
	return []any{c.id, c.idx - 1, c.buf[:c.n]}, nil
}

func (c *chunkSource) Err() error { return c.err }

// FetchedContent stores content fetched from a URI and moves UPLOADING → PROCESSING.
func (s *Store) FetchedContent(ctx context.Context, id, owner string, content *Content) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE vnf_packages SET onboarding_state='PROCESSING', updated_at=now()
			WHERE id=$1 AND onboarding_owner=$2 AND onboarding_state='UPLOADING'`, id, owner)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrLeaseLost
		}
		return putContent(ctx, tx, id, content)
	})
}

// RenewOnboarding extends an onboarding lease.
func (s *Store) RenewOnboarding(ctx context.Context, id, owner string, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, `UPDATE vnf_packages SET onboarding_until=now()+$3::interval
		WHERE id=$1 AND onboarding_owner=$2 AND onboarding_state IN ('UPLOADING','PROCESSING')`, id, owner, lease.String())
	if err == nil && tag.RowsAffected() == 0 {
		return ErrLeaseLost
	}
	return err
}

// ClaimStaleOnboarding takes over an onboarding whose process stopped.
func (s *Store) ClaimStaleOnboarding(ctx context.Context, owner string, lease time.Duration) (*VnfPackage, error) {
	var id string
	err := s.pool.QueryRow(ctx, `UPDATE vnf_packages SET onboarding_owner=$1, onboarding_until=now()+$2::interval
		WHERE id = (SELECT id FROM vnf_packages WHERE onboarding_state IN ('UPLOADING','PROCESSING')
			AND (onboarding_until IS NULL OR onboarding_until < now()) ORDER BY seq FOR UPDATE SKIP LOCKED LIMIT 1)
		RETURNING id::text`, owner, lease.String()).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.GetPackage(ctx, id)
}

// PackageContent returns the stored CSAR in memory (WritePackageContent
// streams it).
func (s *Store) PackageContent(ctx context.Context, id string) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := s.WritePackageContent(ctx, id, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WritePackageContent writes the stored CSAR to w, a chunk at a time, and
// returns its size. ErrNotFound when the package has no content.
func (s *Store) WritePackageContent(ctx context.Context, id string, w io.Writer) (int64, error) {
	var whole []byte
	var size int64
	err := s.pool.QueryRow(ctx, `SELECT content, size FROM vnf_package_contents WHERE package_id=$1`, id).Scan(&whole, &size)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	if whole != nil { // stored before chunks existed
		n, err := w.Write(whole)
		return int64(n), err
	}
	var written int64
	for idx := 0; written < size; idx++ {
		var chunk []byte
		err := s.pool.QueryRow(ctx, `SELECT data FROM vnf_package_chunks WHERE package_id=$1 AND idx=$2`, id, idx).Scan(&chunk)
		if errors.Is(err, pgx.ErrNoRows) {
			return written, fmt.Errorf("store: content of package %s: chunk %d is missing", id, idx)
		}
		if err != nil {
			return written, err
		}
		n, err := w.Write(chunk)
		written += int64(n)
		if err != nil {
			return written, err
		}
	}
	if written != size {
		return written, fmt.Errorf("store: content of package %s has %d bytes, want %d", id, written, size)
	}
	return written, nil
}

// Onboarded is the result of a successful onboarding.
type Onboarded struct {
	Vnfd                *model.Vnfd
	Checksum            map[string]any
	SoftwareImages      []map[string]any
	AdditionalArtifacts []map[string]any
	VnfdFiles           []string
}

// ErrDuplicateVnfd means another package already carries the vnfdId.
var ErrDuplicateVnfd = errors.New("duplicate vnfdId")

// FinishOnboarding records success (ONBOARDED, ENABLED) or failure (back to
// CREATED with the problem, content discarded), fenced by the lease owner.
func (s *Store) FinishOnboarding(ctx context.Context, id, owner string, ok *Onboarded, failure *model.ProblemDetails) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM vnf_packages WHERE id=$1 AND onboarding_owner=$2
			AND onboarding_state IN ('UPLOADING','PROCESSING') FOR UPDATE`, id, owner).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if failure != nil {
			fb, _ := json.Marshal(failure)
			if _, err := tx.Exec(ctx, `DELETE FROM vnf_package_contents WHERE package_id=$1`, id); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE vnf_packages SET onboarding_state='CREATED', onboarding_failure=$2,
				onboarding_owner=NULL, onboarding_until=NULL, source=NULL, updated_at=now() WHERE id=$1`, id, fb)
			return err
		}
		v := ok.Vnfd
		var other string
		err = tx.QueryRow(ctx, `SELECT id::text FROM vnf_packages WHERE vnfd_id=$1 AND id<>$2`, v.ID, id).Scan(&other)
		if err == nil {
			return fmt.Errorf("%w: VNFD %s is already onboarded by VNF package %s", ErrDuplicateVnfd, v.ID, other)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		vnfd, _ := json.Marshal(v)
		sum, _ := jsonOrNull(ok.Checksum)
		imgs, _ := jsonOrNull(ok.SoftwareImages)
		arts, _ := jsonOrNull(ok.AdditionalArtifacts)
		files, _ := jsonOrNull(ok.VnfdFiles)
		_, err = tx.Exec(ctx, `UPDATE vnf_packages SET onboarding_state='ONBOARDED', operational_state='ENABLED',
			vnfd_id=$2, vnf_provider=$3, vnf_product_name=$4, vnf_software_version=$5, vnfd_version=$6, vnfd=$7,
			checksum=$8, software_images=$9, additional_artifacts=$10, vnfd_files=$11, onboarding_failure=NULL,
			onboarding_owner=NULL, onboarding_until=NULL, source=NULL, updated_at=now() WHERE id=$1`,
			id, v.ID, v.Provider, v.ProductName, v.SoftwareVersion, v.Version, vnfd, sum, imgs, arts, files)
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: VNFD %s is already onboarded by another VNF package", ErrDuplicateVnfd, v.ID)
		}
		return err
	})
}

// PutPackage inserts or replaces an onboarded package row (fixtures and tests).
func (s *Store) PutPackage(ctx context.Context, p *model.Package) error {
	if p.Vnfd == nil {
		return errors.New("store: package without VNFD")
	}
	vnfd, err := json.Marshal(p.Vnfd)
	if err != nil {
		return err
	}
	v := p.Vnfd
	_, err = s.pool.Exec(ctx, `INSERT INTO vnf_packages (id, vnfd_id, onboarding_state, operational_state, vnfd,
			vnf_provider, vnf_product_name, vnf_software_version, vnfd_version)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)
		ON CONFLICT (id) DO UPDATE SET vnfd_id=EXCLUDED.vnfd_id, onboarding_state=EXCLUDED.onboarding_state,
			operational_state=EXCLUDED.operational_state, vnfd=EXCLUDED.vnfd, vnf_provider=EXCLUDED.vnf_provider,
			vnf_product_name=EXCLUDED.vnf_product_name, vnf_software_version=EXCLUDED.vnf_software_version,
			vnfd_version=EXCLUDED.vnfd_version`,
		p.ID, v.ID, p.OnboardingState, p.OperationalState, vnfd, v.Provider, v.ProductName, v.SoftwareVersion, v.Version)
	return err
}
