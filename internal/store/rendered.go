package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// InstanceDoc is a VNF instance's API document as GET serves it: masked and
// serialised (without _links, which depend on the endpoint), with what the
// response headers and links need.
type InstanceDoc struct {
	ID                 string
	InstantiationState string
	Version            int64
	UpdatedAt          time.Time
	// Doc is the JSON object of the instance, every secret masked.
	Doc []byte
}

// RenderRev identifies what a rendered document depends on besides the row:
// the masking rules and the model's JSON shape, i.e. the build of the VNFM.
// It is a digest of the running executable, so any other build (another
// masking rule, another field) renders every document again before serving
// it. When the executable cannot be read, a random value per process does
// the same, at the price of rendering once per instance per start.
var RenderRev = sync.OnceValue(func() string {
	h := sha256.New()
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			_, err = io.Copy(h, f)
			_ = f.Close()
			if err == nil {
				return hex.EncodeToString(h.Sum(nil)[:16])
			}
		}
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "random-" + hex.EncodeToString(b)
})

// RenderInstance is the API document of an instance: its JSON with every
// value under a secret key masked (secrets.MaskJSON). The only way an
// instance leaves the server.
func RenderInstance(in *model.VnfInstance) ([]byte, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	return secrets.MaskJSON(b)
}

// renderRow renders the instance exactly as it will read back from the row
// being written: the scalar attributes of in and the jsonb columns' values
// (decodeDocs order), decoded as scanInstance decodes them.
func renderRow(in *model.VnfInstance, docs [][]byte) ([]byte, error) {
	row := model.VnfInstance{ID: in.ID, VnfInstanceName: in.VnfInstanceName, VnfInstanceDescription: in.VnfInstanceDescription,
		VnfdID: in.VnfdID, VnfProvider: in.VnfProvider, VnfProductName: in.VnfProductName,
		VnfSoftwareVersion: in.VnfSoftwareVersion, VnfdVersion: in.VnfdVersion, VnfPkgID: in.VnfPkgID,
		InstantiationState: in.InstantiationState}
	// uuid columns read back in their canonical form.
	for _, s := range []*string{&row.ID, &row.VnfPkgID} {
		if u, err := uuid.Parse(*s); err == nil {
			*s = u.String()
		}
	}
	if err := decodeDocs(&row, docs); err != nil {
		return nil, err
	}
	return RenderInstance(&row)
}

// GetInstanceDoc reads the rendered document of an instance. One that was
// rendered for an older version or by another build (or never, e.g. rows
// written by COPY) is rendered from the row and kept for the next reader,
// unless a writer holds the row.
func (s *Store) GetInstanceDoc(ctx context.Context, id string) (*InstanceDoc, error) {
	var d InstanceDoc
	if err := s.ReadInstanceDoc(ctx, id, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// getDocSQL reads what GET needs of an instance: the rendered document only
// when it is current (version and build).
const getDocSQL = `SELECT id, instantiation_state, version, updated_at,
	CASE WHEN rendered_version = version AND rendered_rev = $2 THEN rendered_doc END
	FROM vnf_instances WHERE id = $1`

// ReadInstanceDoc is GetInstanceDoc into d, whose Doc is reused: the
// document is appended to d.Doc[:0] straight from the driver's buffer, so a
// caller that keeps d for the next request allocates nothing for it.
func (s *Store) ReadInstanceDoc(ctx context.Context, id string, d *InstanceDoc) error {
	rev := RenderRev()
	rows, err := s.pool.Query(ctx, getDocSQL, id, rev)
	if err != nil {
		return err
	}
	found, current := false, false
	if rows.Next() {
		found = true
		var doc pgtype.DriverBytes // valid until rows.Close
		if err := rows.Scan(&d.ID, &d.InstantiationState, &d.Version, &d.UpdatedAt, &doc); err != nil {
			rows.Close()
			return err
		}
		if doc != nil {
			current = true
			d.Doc = append(d.Doc[:0], doc...)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	if current {
		return nil
	}
	in, err := s.GetInstance(ctx, id)
	if err != nil {
		return err
	}
	doc, err := RenderInstance(&in.VnfInstance)
	if err != nil {
		return err
	}
	// SKIP LOCKED: a reader never waits for a writer's transaction.
	if _, err := s.pool.Exec(ctx, `UPDATE vnf_instances SET rendered_doc=$3, rendered_version=version, rendered_rev=$4
		WHERE id = (SELECT id FROM vnf_instances WHERE id=$1 AND version=$2
		            AND (rendered_version IS DISTINCT FROM version OR rendered_rev IS DISTINCT FROM $4)
		            FOR NO KEY UPDATE SKIP LOCKED)`, id, in.Version, doc, rev); err != nil {
		s.log.Warn("keeping the rendered document of an instance failed", "vnfInstanceId", id, "err", err)
	}
	d.ID, d.InstantiationState, d.Version, d.UpdatedAt, d.Doc = in.ID, in.InstantiationState, in.Version, in.UpdatedAt, doc
	return nil
}
