package lcm

import (
	"bytes"
	"context"
	"fmt"

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
// are not sealed yet (store.ResealFunc). SealJSON keeps the rest of the
// document, current sealed values included, as written: a document with
// nothing to seal comes back byte for byte.
func (s *Service) sealPlain(doc []byte, at secrets.Place) ([]byte, bool, error) {
	out, err := s.box.SealJSON(doc, at)
	if err != nil {
		return nil, false, err
	}
	return out, !bytes.Equal(out, doc), nil
}
