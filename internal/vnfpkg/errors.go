package vnfpkg

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is an onboarding error. It names the package file (and the line and
// column when it comes from a YAML or TOSCA.meta line) and its Msg says what
// is wrong and how to fix it; it is shown to users as is.
type Error struct {
	File   string // path inside the package, "" for the archive itself
	Line   int    // 1-based, 0 when unknown
	Column int    // 1-based, 0 when unknown
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteByte(':')
				b.WriteString(strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// errorf returns an *Error for file (no position).
func errorf(file, format string, args ...any) *Error {
	return &Error{File: file, Msg: fmt.Sprintf(format, args...)}
}

// errAt returns an *Error at a line of file.
func errAt(file string, line int, format string, args ...any) *Error {
	return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// errNode returns an *Error at the position of a YAML node of file.
func errNode(file string, n *yaml.Node, format string, args ...any) *Error {
	e := &Error{File: file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// quoteList renders names as `"a", "b"` for messages ("none" when empty).
func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
