package lcm

import (
	"encoding/json"
	"sync"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// handoff carries what accepting an operation read to its first run in this
// process: the instance, opened, when it is the version the transaction that
// created the op occurrence read, locked (store.OpOcc.CreatedFrom: nothing
// changes it before the operation does), and the VNFD the request was
// checked against, the management drivers' parameters it accepted
// (what the op's driver_params hold, sealed), and the request as decoded
// (the op's operation_params). That run reads, decrypts and decodes none of
// them again (it still opens operation_params, for the values to scrub). A run
// in another process, a resumed run, or one that claims the operation before
// accept handed it over reads both from the database as before. An
// operation this process runs itself (Engine.reserveRun) is handed to its
// run directly; the map is for those the dispatcher claims.
type handoff struct {
	mu       sync.Mutex
	cur, old map[string]handed // two generations bound what is never taken
}

type handed struct {
	in   *model.VnfInstance // opened: secrets in the clear; the run's to change
	docs [][]byte           // in's JSON attributes, for the values to scrub
	vnfd *model.Vnfd
	// params are the drivers' parameters as accepted, by driver name:
	// the plaintext of the op's driver_params (nil: none).
	params map[string]json.RawMessage
	// kept remembers the sealed values in was opened from.
	kept *secrets.Kept
	// req is the request as accept decoded it from the plaintext of the
	// op's operation_params (nil: the run decodes them); nothing changes a
	// decoded request.
	req *driverapi.Request
	// vims, when resolved is set, is the request's vimConnectionInfo as
	// accept resolved it (credentials in the clear): given only to a run
	// this process starts at once (Engine.reserveRun), for which that is
	// the VIM's current state, never to one the dispatcher may claim later.
	vims     []model.VimConnectionInfo
	resolved bool
}

// handoffGeneration bounds one generation: operations accepted here and run
// by another process are never taken, and go with their generation.
const handoffGeneration = 1024

func (h *handoff) put(opID string, v handed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil || len(h.cur) >= handoffGeneration {
		h.old, h.cur = h.cur, make(map[string]handed, 64)
	}
	h.cur[opID] = v
}

func (h *handoff) take(opID string) *handed {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range []map[string]handed{h.cur, h.old} {
		if v, ok := m[opID]; ok {
			delete(m, opID)
			return &v
		}
	}
	return nil
}
