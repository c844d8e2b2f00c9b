package sol013

import (
	"strings"
	"time"
)

// Date-time attributes (KindDateTime) are compared as instants: the API
// writes them with as many fractional digits as the value has (Go drops
// trailing zeros) while a database view may write six, and a client may copy
// either, or give another offset. Both sides are read as RFC 3339 and
// compared at PostgreSQL's precision, the microsecond.

// parseInstant reads an RFC 3339 date-time with any number of fractional
// digits. A space where the offset's '+' belongs is read as '+': an
// unencoded '+' in a query string arrives as a space.
func parseInstant(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		i := strings.LastIndexByte(s, ' ')
		if i < len("2006-01-02T15:04:05") {
			return time.Time{}, false
		}
		if t, err = time.Parse(time.RFC3339Nano, s[:i]+"+"+s[i+1:]); err != nil {
			return time.Time{}, false
		}
	}
	return t.Round(time.Microsecond), true
}

// sqlInstant writes an instant for a PostgreSQL timestamptz cast.
func sqlInstant(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// compareInstant orders a document value against a filter value; ok is
// false when the document value is not a date-time string.
func compareInstant(x any, v string) (int, bool) {
	s, ok := x.(string)
	if !ok {
		return 0, false
	}
	dt, ok := parseInstant(s)
	if !ok {
		return 0, false
	}
	ft, ok := parseInstant(v)
	if !ok {
		return 0, false
	}
	return dt.Compare(ft), true
}

// instantPattern guards the timestamptz cast of document strings in SQL:
// only strings shaped like RFC 3339 date-times are cast (the attributes
// of this kind are written by the server, so their fields are in range).
const instantPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$`
