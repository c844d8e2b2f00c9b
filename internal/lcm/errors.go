package lcm

import (
	"errors"
	"fmt"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Error kinds the API maps to HTTP status codes.
type Kind int

// Kinds of Error.
const (
	KindInvalid       Kind = iota + 1 // 400: the request is wrong
	KindNotFound                      // 404
	KindConflict                      // 409: the resource's state forbids it
	KindPrecondition                  // 412: If-Match mismatch
	KindUnprocessable                 // 422: well-formed but refers to something unusable
	KindNotSupported                  // 404 with a detail, as SOL003 asks for unsupported tasks
	KindNotAcceptable                 // 406: the resource exists but not in the asked-for media type
)

// Error is an LCM request error with a detail written for the caller.
type Error struct {
	Kind   Kind
	Detail string
	Err    error
}

func (e *Error) Error() string { return e.Detail }
func (e *Error) Unwrap() error { return e.Err }

func errorf(k Kind, format string, a ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, a...)}
}

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
