//go:build tools

// Package tools names the command kubeworld builds, so that go mod tidy
// records every dependency it needs.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
