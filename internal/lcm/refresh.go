package lcm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// refreshPage is how many settled instances one query of a refresh pass reads.
const refreshPage = 100

// refreshTimeout bounds the refresh of one instance (its VIM may be down).
const refreshTimeout = 30 * time.Second

// refreshLoop refreshes, every interval, the records of the settled
// instances whose infra driver is a driverapi.Refresher, until ctx ends.
func (e *Engine) refreshLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := e.RefreshAll(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			e.log.Warn("refreshing the records of VNF instances from their VIMs", "refreshed", n, "err", err)
		case n > 0:
			e.log.Info("refreshed the records of VNF instances from their VIMs", "refreshed", n)
		}
	}
}

// RefreshAll makes one refresh pass over the settled instances (INSTANTIATED,
// no operation in progress, latest operation not FAILED) whose VIM's infra
// driver can refresh, and returns how many it rewrote. An instance that
// cannot be refreshed (VIM unreachable) is logged and skipped; the error
// reports the first such failure after the pass.
func (e *Engine) RefreshAll(ctx context.Context) (int, error) {
	var (
		after    int64
		n        int
		firstErr error
	)
	for ctx.Err() == nil {
		page, err := e.svc.st.SettledInstances(ctx, after, refreshPage)
		if err != nil {
			return n, err
		}
		for _, in := range page {
			after = in.Seq
			wrote, err := e.refreshOne(ctx, in)
			if err != nil {
				e.log.Warn("cannot refresh the records of a VNF instance from its VIM; trying again at the next pass",
					"vnfInstanceId", in.ID, "err", err)
				if firstErr == nil {
					firstErr = fmt.Errorf("VNF instance %s: %w", in.ID, err)
				}
				continue
			}
			if wrote {
				n++
			}
		}
		if len(page) < refreshPage {
			break
		}
	}
	return n, firstErr
}

// refreshOne asks the instance's infra driver to refresh its records and
// writes them when they changed and the instance is still as read.
func (e *Engine) refreshOne(ctx context.Context, in *store.Instance) (bool, error) {
	if len(in.VimConnectionInfo) == 0 {
		return false, nil
	}
	d, ok := e.svc.infra(in.VimConnectionInfo[0].VimType)
	if !ok {
		return false, nil
	}
	rf, ok := d.(driverapi.Refresher)
	if !ok {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	// Read again, opened, with its VNFD: the version the write is checked
	// against is the one refreshed.
	kept := &secrets.Kept{}
	read, err := e.svc.st.OpenInstanceAndPackage(ctx, in.ID, e.svc.opener(kept))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if read.Package == nil || read.Package.Vnfd == nil {
		return false, fmt.Errorf("VNF package of vnfdId %s: %w", read.VnfdID, store.ErrNotFound)
	}
	opened, pkg := &read.VnfInstance, read.Package
	if len(opened.VimConnectionInfo) == 0 {
		return false, nil
	}
	op := &driverapi.Op{Operation: "REFRESH", Instance: opened, Vnfd: pkg.Vnfd, Vim: &opened.VimConnectionInfo[0],
		Infra: d, Log: e.log.With("vnfInstanceId", in.ID), Package: &pkgFiles{st: e.svc.st, pkgID: opened.VnfPkgID},
		Vims: e.svc.vims, Previous: map[string]json.RawMessage{}, Scratch: map[string]json.RawMessage{},
		ResourceChanges: &model.ResourceChanges{}}
	if info := opened.InstantiatedVnfInfo; info != nil {
		op.Flavour = pkg.Vnfd.Flavours[info.FlavourID]
	}
	changed, err := rf.Refresh(ctx, op)
	if err != nil || !changed {
		return false, err
	}
	sealed, _, err := e.svc.sealInstance(op.Instance, kept)
	if err != nil {
		return false, err
	}
	wrote, err := e.svc.st.RefreshInstance(ctx, sealed, read.Version)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return wrote, err
}
