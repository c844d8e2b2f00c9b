package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
// (decodeDocs order), decoded as scanInstance decodes them. The columns'
// values are what encoding/json wrote for the instance's attributes, so
// decoding them and encoding them again gives them back — but for a number
// that a float64 (the type of a number in an `any`) would write otherwise:
// they are spliced into the document as they are and the whole masked in one
// pass (secrets.AppendMasked), unless such a number is in them.
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
	size := 0
	for _, d := range docs {
		if !numbersAsFloat64Writes(d) {
			if err := decodeDocs(&row, docs); err != nil {
				return nil, err
			}
			return RenderInstance(&row)
		}
		size += len(d) + len(`,"vnfConfigurableProperties":`)
	}
	head, err := json.Marshal(&row) // the documents' attributes are empty: omitted
	if err != nil {
		return nil, err
	}
	doc := make([]byte, 0, len(head)+size)
	doc = append(doc, head[:len(head)-1]...)
	for i, d := range docs {
		if len(d) > 0 {
			doc = append(doc, docMembers[i]...)
			doc = append(doc, d...)
		}
	}
	doc = append(doc, '}')
	return secrets.AppendMasked(make([]byte, 0, len(doc)), doc)
}

// docMembers are the members of the jsonb columns' attributes, in decodeDocs order.
var docMembers = [...]string{`,"vnfConfigurableProperties":`, `,"vimConnectionInfo":`, `,"instantiatedVnfInfo":`,
	`,"metadata":`, `,"extensions":`}

// numbersAsFloat64Writes reports whether every number in the JSON document
// raw is written as encoding/json writes it when it was decoded into a
// float64 — an integer of up to 15 digits always is.
func numbersAsFloat64Writes(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < len(raw) && '0' <= raw[j] && raw[j] <= '9' {
				j++
			}
			integer := true
			for j < len(raw) && (raw[j] == '.' || raw[j] == 'e' || raw[j] == 'E' || raw[j] == '+' || raw[j] == '-' || '0' <= raw[j] && raw[j] <= '9') {
				integer = false
				j++
			}
			if tok := raw[i:j]; !integer || len(tok) > 15 {
				f, err := strconv.ParseFloat(string(tok), 64)
				if err != nil {
					return false
				}
				if b, err := json.Marshal(f); err != nil || string(b) != string(tok) {
					return false
				}
			}
			i = j - 1
		}
	}
	return true
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
// when it is current (version and build). Prepared as getDocStmt on each
// connection of the pool; getDocsSQL is the same for several ids.
const (
	getDocSQL = `SELECT id, instantiation_state, version, updated_at,
	CASE WHEN rendered_version = version AND rendered_rev = $2 THEN rendered_doc END
	FROM vnf_instances WHERE id = $1`
	getDocStmt = "vnfm_get_instance_doc"
)

var (
	getDocParamFormats  = []int16{pgx.BinaryFormatCode, pgx.TextFormatCode}
	getDocResultFormats = []int16{pgx.BinaryFormatCode, pgx.TextFormatCode, pgx.BinaryFormatCode, pgx.BinaryFormatCode, pgx.BinaryFormatCode}
	// pgEpoch is where PostgreSQL's binary timestamps count from.
	pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
)

var renderRevBytes = sync.OnceValue(func() []byte { return []byte(RenderRev()) })

// instantiationState returns the state's constant for the column's bytes
// (no allocation for the known values).
func instantiationState(b []byte) string {
	switch string(b) {
	case model.Instantiated:
		return model.Instantiated
	case model.NotInstantiated:
		return model.NotInstantiated
	}
	return string(b)
}

// ReadInstanceDoc is GetInstanceDoc into d, whose Doc is reused: the
// document is appended to d.Doc[:0] straight from the driver's buffer, so a
// caller that keeps d for the next request allocates nothing for it.
// Concurrent reads share a statement (docreads.go); it runs prepared on the
// connection's protocol level (pgconn), its uuid parameter and every column
// in binary, decoded here: pgx's general query path (argument encoding,
// scan plans, rows) cost more than the database's own work for this
// one-row read.
func (s *Store) ReadInstanceDoc(ctx context.Context, id string, d *InstanceDoc) error {
	u, err := uuid.Parse(id)
	if err != nil {
		return ErrNotFound // no row has a malformed id
	}
	found, current, err := s.readDocs(ctx, id, u, d)
	if err != nil {
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
		            FOR NO KEY UPDATE SKIP LOCKED)`, id, in.Version, doc, RenderRev()); err != nil {
		s.log.Warn("keeping the rendered document of an instance failed", "vnfInstanceId", id, "err", err)
	}
	d.ID, d.InstantiationState, d.Version, d.UpdatedAt, d.Doc = in.ID, in.InstantiationState, in.Version, in.UpdatedAt, doc
	return nil
}
