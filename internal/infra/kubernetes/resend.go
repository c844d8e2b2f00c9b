package kubernetes

import (
	"errors"
	"net/http"
	"syscall"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// resendAttempts bounds how often a request is sent when its connection
// breaks under it.
const resendAttempts = 3

// resendOnBrokenConnection sends a request again, on a new connection, when
// the one it went out on was reset or closed before any response came back.
// Go's transport does so itself only for GET, HEAD and OPTIONS; this driver
// sends DELETE, POST, PUT and PATCH as well. The typical cause is an HA
// cluster's VIP moving to another master (keepalived failing back after a
// heal): every kept-alive connection to the old holder's HAProxy is dead and
// the next request on one of them is reset. Sending again is safe for what
// this driver sends: every call is part of a convergent step (a create finds
// AlreadyExists, a delete NotFound, a replicas patch sets the same value),
// exactly as when the whole step runs again after a crash.
type resendOnBrokenConnection struct{ next http.RoundTripper }

func (t resendOnBrokenConnection) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := t.next.RoundTrip(req)
		if err == nil || attempt == resendAttempts || !brokenConnection(err) || req.Context().Err() != nil {
			return resp, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return resp, err // the body cannot be sent again
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return resp, err
			}
			r := req.Clone(req.Context())
			r.Body = body
			req = r
		}
		// The other kept-alive connections went to the same place.
		if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}

// brokenConnection tells a connection reset or closed under a request from
// any other failure (a refused dial, a timeout, a TLS error: not resent).
func brokenConnection(err error) bool {
	return utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || errors.Is(err, syscall.EPIPE)
}
