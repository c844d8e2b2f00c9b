package oidc

import "time"

// SetClock makes s read the time from now.
func SetClock(s *Source, now func() time.Time) { s.now = now }
