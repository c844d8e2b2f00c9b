package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// Instance is a stored VNF instance. Secret values inside it are sealed by the
// caller (the lcm package) before they get here.
type Instance struct {
	model.VnfInstance
	Seq       int64
	Version   int64 // ETag; bumped on every change
	CreatedAt time.Time
	UpdatedAt time.Time
}

const instanceCols = `id, seq, vnf_instance_name, vnf_instance_description, vnfd_id, vnf_pkg_id,
	vnf_provider, vnf_product_name, vnf_software_version, vnfd_version, instantiation_state,
	vnf_configurable_properties, vim_connection_info, instantiated_vnf_info, metadata, extensions,
	version, created_at, updated_at`

func scanInstance(row pgx.Row) (*Instance, error) {
	in, _, err := scanInstanceOpen(row, nil)
	return in, err
}

// docNames are the JSON names of the jsonb attributes, in decodeDocs order.
var docNames = [...]string{"vnfConfigurableProperties", "vimConnectionInfo", "instantiatedVnfInfo", "metadata", "extensions"}

// Opener opens the sealed values of a JSON document stored at p (the lcm
// package's secrets.Box.OpenJSON).
type Opener func(raw []byte, p secrets.Place) ([]byte, error)

// scanInstanceOpen is scanInstance that, with open, decodes the instance
// with its sealed values opened: each jsonb attribute that holds one is
// opened at its place (InstancePlace(id).Key(name), where sealing the whole
// instance put its values) before it is decoded — one decode, instead of
// encoding the stored instance again to open and decode it. docs are the
// attributes' JSON as decoded.
func scanInstanceOpen(row pgx.Row, open Opener) (*Instance, [][]byte, error) {
	in, docs, err := scanInstanceRaw(row)
	if err != nil {
		return nil, nil, err
	}
	if err := openDocs(in, docs, open); err != nil {
		return nil, nil, err
	}
	return in, docs, nil
}

// openDocs opens (with open, when given) and decodes the jsonb attributes
// docs of in, as scanned by scanInstanceRaw; docs keeps them opened.
func openDocs(in *Instance, docs [][]byte, open Opener) error {
	if open != nil {
		for i, raw := range docs {
			if secrets.HasSealed(raw) {
				var err error
				if docs[i], err = open(raw, InstancePlace(in.ID).Key(docNames[i])); err != nil {
					return fmt.Errorf("cannot decrypt VNF instance %s: %w", in.ID, err)
				}
			}
		}
	}
	return decodeDocs(&in.VnfInstance, docs)
}

// scanInstanceHead is scanInstance without decoding the jsonb attributes,
// for what needs only an instance's identity, names, state and version (the
// events of notifications, an operation's creation): on an instantiated
// instance, decoding instantiatedVnfInfo is most of the read.
func scanInstanceHead(row pgx.Row) (*Instance, error) {
	in, _, err := scanInstanceRaw(row)
	return in, err
}

// scanInstanceRaw scans instanceCols: the jsonb attributes are returned as
// read, in decodeDocs order, not decoded.
func scanInstanceRaw(row pgx.Row) (*Instance, [][]byte, error) {
	var (
		in                       Instance
		name, desc, pkg          *string
		vcp, vci, ivi, meta, ext []byte
	)
	err := row.Scan(&in.ID, &in.Seq, &name, &desc, &in.VnfdID, &pkg, &in.VnfProvider, &in.VnfProductName,
		&in.VnfSoftwareVersion, &in.VnfdVersion, &in.InstantiationState, &vcp, &vci, &ivi, &meta, &ext,
		&in.Version, &in.CreatedAt, &in.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	in.VnfInstanceName, in.VnfInstanceDescription, in.VnfPkgID = deref(name), deref(desc), deref(pkg)
	return &in, [][]byte{vcp, vci, ivi, meta, ext}, nil
}

// decodeDocs fills the jsonb attributes of in from their column values, in
// the order vnf_configurable_properties, vim_connection_info,
// instantiated_vnf_info, metadata, extensions (nil: NULL).
func decodeDocs(in *model.VnfInstance, raw [][]byte) error {
	for i, dst := range []any{&in.VnfConfigurableProperties, &in.VimConnectionInfo, &in.InstantiatedVnfInfo, &in.Metadata, &in.Extensions} {
		if len(raw[i]) > 0 {
			if err := json.Unmarshal(raw[i], dst); err != nil {
				return fmt.Errorf("store: instance %s: %w", in.ID, err)
			}
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// jsonOrNull encodes v, mapping empty values to SQL NULL.
func jsonOrNull(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return nullIfEmpty(b), nil
}

// nullIfEmpty is nil for the encoding of a nil or empty value, else b.
func nullIfEmpty(b []byte) []byte {
	switch string(b) {
	case "null", "{}", "[]":
		return nil
	}
	return b
}

// CreateInstance inserts a new NOT_INSTANTIATED instance.
func (s *Store) CreateInstance(ctx context.Context, in *model.VnfInstance) (*Instance, error) {
	vcp, err := jsonOrNull(in.VnfConfigurableProperties)
	if err != nil {
		return nil, err
	}
	meta, err := jsonOrNull(in.Metadata)
	if err != nil {
		return nil, err
	}
	ext, err := jsonOrNull(in.Extensions)
	if err != nil {
		return nil, err
	}
	vci, err := jsonOrNull(in.VimConnectionInfo)
	if err != nil {
		return nil, err
	}
	created0 := *in
	created0.InstantiationState = model.NotInstantiated
	created0.InstantiatedVnfInfo = nil
	doc, err := renderRow(&created0, [][]byte{vcp, vci, nil, meta, ext})
	if err != nil {
		return nil, err
	}
	var created *Instance
	err = inTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The package must stay ONBOARDED and ENABLED until the instance exists:
		// FOR SHARE serialises against disable and delete.
		if in.VnfPkgID != "" {
			var onb, op string
			err := tx.QueryRow(ctx, `SELECT onboarding_state, operational_state FROM vnf_packages WHERE id=$1 FOR SHARE`, in.VnfPkgID).Scan(&onb, &op)
			if errors.Is(err, pgx.ErrNoRows) {
				return &ConflictError{Reason: fmt.Sprintf("VNF package %s no longer exists", in.VnfPkgID)}
			}
			if err != nil {
				return err
			}
			if onb != model.Onboarded || op != model.Enabled {
				return &ConflictError{State: op, Reason: fmt.Sprintf("VNF package %s is %s/%s; it must be ONBOARDED and ENABLED", in.VnfPkgID, onb, op)}
			}
		}
		var err error
		created, err = scanInstance(tx.QueryRow(ctx, `INSERT INTO vnf_instances (id, vnf_instance_name, vnf_instance_description, vnfd_id,
		vnf_pkg_id, vnf_provider, vnf_product_name, vnf_software_version, vnfd_version, instantiation_state,
		vnf_configurable_properties, vim_connection_info, metadata, extensions, rendered_doc, rendered_version, rendered_rev)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,'NOT_INSTANTIATED',$10,$11,$12,$13,$14,1,$15) RETURNING `+instanceCols,
			in.ID, nullable(in.VnfInstanceName), nullable(in.VnfInstanceDescription), in.VnfdID, nullable(in.VnfPkgID),
			in.VnfProvider, in.VnfProductName, in.VnfSoftwareVersion, in.VnfdVersion, vcp, vci, meta, ext, doc, RenderRev()))
		if err != nil {
			return err
		}
		return notifyInstance(ctx, tx, lccn.TypeCreation, &created.VnfInstance)
	})
	return created, err
}

// GetInstance reads one instance.
func (s *Store) GetInstance(ctx context.Context, id string) (*Instance, error) {
	return scanInstance(s.pool.QueryRow(ctx, `SELECT `+instanceCols+` FROM vnf_instances WHERE id = $1`, id))
}

// writeInstance replaces the mutable parts of an instance inside tx.
func writeInstance(ctx context.Context, tx pgx.Tx, in *model.VnfInstance) error {
	q, args, err := instanceUpdate(in)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// instanceUpdate is the statement that replaces a stored instance ($1..$17),
// with the document GET serves rendered here, once per change, for the
// version this update makes.
func instanceUpdate(in *model.VnfInstance) (string, []any, error) {
	args, err := instanceUpdateArgs(in, nil)
	if err != nil {
		return "", nil, err
	}
	return `UPDATE vnf_instances SET vnf_instance_name=$2, vnf_instance_description=$3, vnfd_id=$4,
		vnf_pkg_id=$5, vnf_provider=$6, vnf_product_name=$7, vnf_software_version=$8, vnfd_version=$9,
		instantiation_state=$10, vnf_configurable_properties=$11, vim_connection_info=$12,
		instantiated_vnf_info=$13, metadata=$14, extensions=$15, version=version+1, updated_at=now(),
		rendered_doc=$16, rendered_version=version+1, rendered_rev=$17
		WHERE id=$1`, args, nil
}

// InstanceDocs are an instance's jsonb attributes — vnfConfigurableProperties,
// vimConnectionInfo, instantiatedVnfInfo, metadata, extensions — each as
// json.Marshal writes it, or nil where it is to be encoded from the instance.
type InstanceDocs [5][]byte

// instanceUpdateArgs are instanceUpdate's $1..$17; docs, when given, holds
// attributes of in encoded already.
func instanceUpdateArgs(in *model.VnfInstance, docs *InstanceDocs) ([]any, error) {
	vals := make([][]byte, 0, 5)
	for k, v := range []any{in.VnfConfigurableProperties, in.VimConnectionInfo, in.InstantiatedVnfInfo, in.Metadata, in.Extensions} {
		var b []byte
		var err error
		if docs != nil && docs[k] != nil {
			b = nullIfEmpty(docs[k])
		} else if b, err = jsonOrNull(v); err != nil {
			return nil, err
		}
		vals = append(vals, b)
	}
	if in.InstantiatedVnfInfo == nil {
		vals[2] = nil
	}
	doc, err := renderRow(in, vals)
	if err != nil {
		return nil, err
	}
	return []any{in.ID, nullable(in.VnfInstanceName), nullable(in.VnfInstanceDescription), in.VnfdID,
		nullable(in.VnfPkgID), in.VnfProvider, in.VnfProductName, in.VnfSoftwareVersion, in.VnfdVersion,
		in.InstantiationState, vals[0], vals[1], vals[2], vals[3], vals[4], doc, RenderRev()}, nil
}

// DeleteInstance deletes a NOT_INSTANTIATED instance that has no unfinished
// operation. The instance row lock serialises it against CreateOpOcc.
func (s *Store) DeleteInstance(ctx context.Context, id string) (*Instance, error) {
	var deleted *Instance
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		in, err := scanInstance(tx.QueryRow(ctx, `SELECT `+instanceCols+` FROM vnf_instances WHERE id=$1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if in.InstantiationState != model.NotInstantiated {
			return &ConflictError{State: in.InstantiationState, Reason: fmt.Sprintf(
				"VNF instance %s is INSTANTIATED; terminate it first (POST /vnflcm/v1/vnf_instances/%s/terminate), then delete it", id, id)}
		}
		if op, err := activeOp(ctx, tx, id); err != nil {
			return err
		} else if op != nil {
			return &ConflictError{BlockingOp: op, Reason: blockingReason(id, op, "deleted")}
		}
		if err := notifyInstance(ctx, tx, lccn.TypeDeletion, &in.VnfInstance); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM vnf_instances WHERE id=$1`, id); err != nil {
			return err
		}
		deleted = in
		return nil
	})
	return deleted, err
}

func blockingReason(instID string, op *OpOcc, verb string) string {
	what := "wait for it to finish"
	if op.OperationState == model.StateFailedTemp {
		what = fmt.Sprintf("resolve it first with POST /vnflcm/v1/vnf_lcm_op_occs/%s/retry, /rollback or /fail", op.ID)
	}
	return fmt.Sprintf("VNF instance %s cannot be %s while LCM operation occurrence %s (%s) is %s; %s",
		instID, verb, op.ID, op.Operation, op.OperationState, what)
}
