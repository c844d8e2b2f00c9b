// Package reqerr is the error of a request the VNFM refuses: a Kind the API
// maps to an HTTP status and a Detail written for the caller (what was
// wrong, how to fix it). The services (lcm, vims, packages) return it; api
// renders it as SOL013 ProblemDetails. A leaf package: it imports nothing of
// ours.
package reqerr

import (
	"errors"
	"fmt"
)

// Kind classifies a refused request.
type Kind int

// Kinds of Error.
const (
	Invalid       Kind = iota + 1 // 400: the request is wrong
	NotFound                      // 404
	Conflict                      // 409: the resource's state forbids it
	Precondition                  // 412: If-Match mismatch
	Unprocessable                 // 422: well-formed but refers to something unusable
	NotSupported                  // 404 with a detail, as SOL003 asks for unsupported tasks
	NotAcceptable                 // 406: the resource exists but not in the asked-for media type
)

// Error is a refused request with a detail written for the caller.
type Error struct {
	Kind   Kind
	Detail string
	Err    error
}

func (e *Error) Error() string { return e.Detail }
func (e *Error) Unwrap() error { return e.Err }

// Errorf makes an Error of kind k.
func Errorf(k Kind, format string, a ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, a...)}
}

// As returns err's *Error, if it holds one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
