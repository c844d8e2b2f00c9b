package sol013

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParse checks that ParseFilter never panics, reports errors only as
// *ParseError with an offset inside the input, and that the canonical form
// of every accepted filter parses back to the same terms. Match and SQL run
// on every accepted filter so that they are fuzzed for panics too.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"(eq,id,abc)",
		"(eq,vnfInstanceId,abc);(in,operationState,COMPLETED,FAILED);(cont,metadata/owner,'a,b')",
		"(eq,a,'O''Brien')",
		"(in,a,'',x,'(;)')",
		"(gt,n,-1.5e3)",
		"(neq,a/b/c,x)",
		"(eq,a,'x'",
		"(equal,a,1)",
		"(eq,a,1);",
		"((eq,a,1))",
		"(eq,a,'''')",
	} {
		f.Add(s)
	}
	doc := map[string]any{"a": "x", "n": 1.5, "t": []any{"x", map[string]any{"a": "y"}}}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := ParseFilter(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, not *ParseError: %v", err, err)
			}
			if pe.Offset < 0 || pe.Offset > len(s) {
				t.Fatalf("offset %d outside input of length %d", pe.Offset, len(s))
			}
			return
		}
		canon := flt.String()
		again, err := ParseFilter(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, s, err)
		}
		if !reflect.DeepEqual(stripOffsets(again.Terms), stripOffsets(flt.Terms)) {
			t.Fatalf("round trip of %q via %q changed the terms:\n%#v\n%#v", s, canon, flt.Terms, again.Terms)
		}
		if again.String() != canon {
			t.Fatalf("canonical form is not stable: %q then %q", canon, again.String())
		}
		_ = flt.Match(doc)
		if _, _, err := flt.SQL("doc", nil, nil, 0); err != nil {
			t.Fatalf("SQL without schema failed: %v", err)
		}
	})
}
