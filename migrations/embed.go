// Package migrations embeds the SQL migrations (golang-migrate naming) so the
// binary can migrate any database it is pointed at.
package migrations

import "embed"

// FS holds the *.sql migration files.
//
//go:embed *.sql
var FS embed.FS
