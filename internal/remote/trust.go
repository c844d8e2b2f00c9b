package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// HostKeyTrust is how the first contact with a server trusts its host key.
// Once a key is pinned, every later contact must present it, whatever the
// trust.
type HostKeyTrust string

const (
	// TrustPublished (the default for real clouds): the cloud published
	// the server's host key fingerprints (cloud-init prints them to the
	// console log); Dial waits for them, bounded, and refuses a server
	// without them or whose key is not among them. Nothing is sent to a
	// server whose key could not be verified.
	TrustPublished HostKeyTrust = "published"
	// TrustTOFU: trust on first use: the key offered at the first contact
	// is pinned, unverified unless fingerprints were published. Opt-in:
	// whoever answers first gets the password.
	TrustTOFU HostKeyTrust = "tofu"
	// TrustPinned: the caller gives the fingerprints
	// (PublishedFingerprints); the key must be among them.
	TrustPinned HostKeyTrust = "pinned"
)

// HostKeyTrusts lists the trusts, for messages.
const HostKeyTrusts = "published, tofu or pinned"

// ParseHostKeyTrust reads a trust name (case-insensitive; "" is "").
func ParseHostKeyTrust(s string) (HostKeyTrust, error) {
	switch t := HostKeyTrust(strings.ToLower(strings.TrimSpace(s))); t {
	case "", TrustPublished, TrustTOFU, TrustPinned:
		return t, nil
	}
	return "", fmt.Errorf("unknown SSH host key policy %q; say %s", s, HostKeyTrusts)
}

// Defaults of the wait for published fingerprints.
const (
	DefaultFingerprintWait = 3 * time.Minute
	DefaultFingerprintPoll = 3 * time.Second
)

// UnpublishedError is a server whose host key fingerprints were not
// published in time under TrustPublished: its key cannot be verified, so
// nothing was sent to it. It wraps ErrHostKeyUnknown.
type UnpublishedError struct {
	Host     string
	ServerID string
	Waited   time.Duration
	Err      error // the last error reading them, if any
}

func (e *UnpublishedError) Error() string {
	who := e.Host
	if e.ServerID != "" {
		who += " (server " + e.ServerID + ")"
	}
	s := fmt.Sprintf("remote: %s: no SSH host key fingerprints were published within %s, so its host key cannot be verified "+
		"(SSH host key policy published) and no password was sent", who, e.Waited.Round(time.Second))
	if e.Err != nil {
		s += fmt.Sprintf(" (last error reading them: %v)", e.Err)
	}
	return s + "; retry once cloud-init has printed them to the console log, give the fingerprints (policy pinned), " +
		"or accept the first key offered (policy tofu)"
}

func (e *UnpublishedError) Unwrap() error { return ErrHostKeyUnknown }

// resolveTrust applies t.HostKeyTrust before Dial: published and pinned
// forbid trust on first use (HostKeyPin becomes HostKeyRequireKnown), and
// published waits for the fingerprints when the server has no pin yet.
func resolveTrust(ctx context.Context, t *Target, addr string) error {
	switch t.HostKeyTrust {
	case "":
		return nil
	case TrustTOFU:
		if t.HostKeyPolicy == HostKeyRequireKnown {
			t.HostKeyPolicy = HostKeyPin
		}
		return nil
	case TrustPinned:
		if len(t.PublishedFingerprints) == 0 {
			return fmt.Errorf("remote: %s: SSH host key policy pinned needs the server's fingerprints, and none were given", addr)
		}
	case TrustPublished:
	default:
		return fmt.Errorf("remote: unknown HostKeyTrust %q; say %s", t.HostKeyTrust, HostKeyTrusts)
	}
	if t.HostKeyPolicy == HostKeyPin {
		t.HostKeyPolicy = HostKeyRequireKnown
	}
	if t.HostKeyPolicy == InsecureIgnoreHostKey || len(t.PublishedFingerprints) > 0 {
		return nil
	}
	if t.HostKeyPolicy != HostKeyRepin && t.Pins != nil && t.PinKey.ServerID != "" {
		a := t.PinKey.Address
		if a == "" {
			a = t.Host
		}
		pins, err := t.Pins.Get(ctx, t.PinKey.ServerID, a)
		if err != nil {
			return fmt.Errorf("remote: reading the host key pins of %s: %w", addr, err)
		}
		if len(pins) > 0 {
			return nil // a later contact: the pin decides
		}
	}
	return waitForFingerprints(ctx, t, addr)
}

// waitForFingerprints polls t.FetchFingerprints, bounded.
func waitForFingerprints(ctx context.Context, t *Target, addr string) error {
	wait := orDefault(t.FingerprintWait, DefaultFingerprintWait)
	poll := orDefault(t.FingerprintPoll, DefaultFingerprintPoll)
	start := time.Now()
	unpublished := func(err error) error {
		return &UnpublishedError{Host: addr, ServerID: t.PinKey.ServerID, Waited: time.Since(start), Err: err}
	}
	if t.FetchFingerprints == nil {
		return unpublished(nil)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var lastErr error
	for {
		fps, err := t.FetchFingerprints(wctx)
		if err == nil && len(fps) > 0 {
			t.PublishedFingerprints = fps
			if t.Logger != nil {
				t.Logger.Info("host key fingerprints published", "host", addr, "waited", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			lastErr = err
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("remote: %s: waiting for the host key fingerprints: %w", addr, ctx.Err())
			}
			return unpublished(lastErr)
		case <-time.After(poll):
		}
	}
}
