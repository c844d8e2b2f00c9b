package lcm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// RunPendingTasks does the work migrations queued for a server with the
// secret key (store.PendingTasks) and removes each task it finished; a task
// that fails stays queued for the next start. Every task converges when run
// again, by this process or another starting at the same time.
func (s *Service) RunPendingTasks(ctx context.Context) error {
	names, err := s.st.PendingTasks(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		switch name {
		case store.TaskSealChangedInfo:
			n, err := s.st.SealChangedInfo(ctx, s.sealPlain)
			if err != nil {
				return fmt.Errorf("pending task %s (sealing the secrets older builds left in MODIFY_INFO changedInfo): %w", name, err)
			}
			s.log.Info("sealed the secrets older builds left in plain text in MODIFY_INFO changedInfo", "ops", n)
		default:
			// A task of a newer build (a database migrated further, then
			// served by this one): left for that build.
			s.log.Warn("pending task unknown to this build; a newer build does it", "task", name)
			continue
		}
		if err := s.st.TaskDone(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// sealPlain seals the values under secret keys of a stored document that
// are not sealed yet (store.ResealFunc); sealed values stay as they are.
func (s *Service) sealPlain(doc []byte, at secrets.Place) ([]byte, bool, error) {
	out, err := s.box.SealJSON(doc, at)
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(out, doc) {
		return doc, false, nil
	}
	var a, b any
	if json.Unmarshal(doc, &a) != nil || json.Unmarshal(out, &b) != nil {
		return out, true, nil
	}
	if reflect.DeepEqual(a, b) {
		return doc, false, nil // the same document, written differently
	}
	return out, true, nil
}
