package lcm

import (
	"errors"

	"github.com/mini-vnfm/mini-vnfm/internal/reqerr"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Error is a refused LCM request (reqerr.Error).
type Error = reqerr.Error

// Kind classifies a refused request (reqerr.Kind).
type Kind = reqerr.Kind

// Kinds of Error, as reqerr names them.
const (
	KindInvalid       = reqerr.Invalid
	KindNotFound      = reqerr.NotFound
	KindConflict      = reqerr.Conflict
	KindPrecondition  = reqerr.Precondition
	KindUnprocessable = reqerr.Unprocessable
	KindNotSupported  = reqerr.NotSupported
	KindNotAcceptable = reqerr.NotAcceptable
)

func errorf(k Kind, format string, a ...any) *Error { return reqerr.Errorf(k, format, a...) }

// fromStore converts store errors into request errors.
func fromStore(err error, what string) error {
	var ce *store.ConflictError
	var pe *store.PreconditionError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return &Error{Kind: KindNotFound, Detail: what, Err: err}
	case errors.As(err, &ce):
		return &Error{Kind: KindConflict, Detail: ce.Reason, Err: err}
	case errors.As(err, &pe):
		return &Error{Kind: KindPrecondition, Detail: pe.Error() + "; GET it again and retry with the new ETag in If-Match", Err: err}
	}
	return err
}
