package sol013

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseFilter(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Term // Offset is checked separately
	}{
		{"eq", "(eq,id,abc)", []Term{{Op: OpEq, Path: []string{"id"}, Values: []string{"abc"}}}},
		{"neq", "(neq,id,abc)", []Term{{Op: OpNeq, Path: []string{"id"}, Values: []string{"abc"}}}},
		{"gt", "(gt,size,10)", []Term{{Op: OpGt, Path: []string{"size"}, Values: []string{"10"}}}},
		{"gte", "(gte,size,-1.5e3)", []Term{{Op: OpGte, Path: []string{"size"}, Values: []string{"-1.5e3"}}}},
		{"lt", "(lt,t,2024-01-01T00:00:00Z)", []Term{{Op: OpLt, Path: []string{"t"}, Values: []string{"2024-01-01T00:00:00Z"}}}},
		{"lte", "(lte,t,x)", []Term{{Op: OpLte, Path: []string{"t"}, Values: []string{"x"}}}},
		{"in one", "(in,s,A)", []Term{{Op: OpIn, Path: []string{"s"}, Values: []string{"A"}}}},
		{"in many", "(in,operationState,COMPLETED,FAILED)", []Term{{Op: OpIn, Path: []string{"operationState"}, Values: []string{"COMPLETED", "FAILED"}}}},
		{"nin", "(nin,s,A,B,C)", []Term{{Op: OpNin, Path: []string{"s"}, Values: []string{"A", "B", "C"}}}},
		{"cont", "(cont,name,vnf)", []Term{{Op: OpCont, Path: []string{"name"}, Values: []string{"vnf"}}}},
		{"ncont", "(ncont,name,a,b)", []Term{{Op: OpNcont, Path: []string{"name"}, Values: []string{"a", "b"}}}},
		{"nested path", "(eq,instantiatedVnfInfo/vnfcResourceInfo/vduId,VDU1)",
			[]Term{{Op: OpEq, Path: []string{"instantiatedVnfInfo", "vnfcResourceInfo", "vduId"}, Values: []string{"VDU1"}}}},
		{"several terms", "(eq,vnfInstanceId,abc);(in,operationState,COMPLETED,FAILED);(cont,metadata/owner,'a,b')", []Term{
			{Op: OpEq, Path: []string{"vnfInstanceId"}, Values: []string{"abc"}},
			{Op: OpIn, Path: []string{"operationState"}, Values: []string{"COMPLETED", "FAILED"}},
			{Op: OpCont, Path: []string{"metadata", "owner"}, Values: []string{"a,b"}},
		}},
		{"quoted comma", "(eq,a,'x,y')", []Term{{Op: OpEq, Path: []string{"a"}, Values: []string{"x,y"}}}},
		{"quoted paren", "(eq,a,'x)y')", []Term{{Op: OpEq, Path: []string{"a"}, Values: []string{"x)y"}}}},
		{"quoted semicolon and open paren", "(eq,a,'(x;y')", []Term{{Op: OpEq, Path: []string{"a"}, Values: []string{"(x;y"}}}},
		{"doubled quote", "(eq,a,'O''Brien')", []Term{{Op: OpEq, Path: []string{"a"}, Values: []string{"O'Brien"}}}},
		{"only a quote", "(eq,a,'''')", []Term{{Op: OpEq, Path: []string{"a"}, Values: []string{"'"}}}},
		{"empty quoted", "(eq,a,'')", []Term{{Op: OpEq, Path: []string{"a"}, Values: []string{""}}}},
		{"quoted and unquoted mixed", "(in,a,'x,y',z,'')", []Term{{Op: OpIn, Path: []string{"a"}, Values: []string{"x,y", "z", ""}}}},
		{"spaces kept", "(eq,a, x y )", []Term{{Op: OpEq, Path: []string{"a"}, Values: []string{" x y "}}}},
		{"unicode", "(eq,metadata/ünï,日本語 ✓)", []Term{{Op: OpEq, Path: []string{"metadata", "ünï"}, Values: []string{"日本語 ✓"}}}},
		{"odd key chars", `(eq,metadata/a"b\c.d$e@f,1)`, []Term{{Op: OpEq, Path: []string{"metadata", `a"b\c.d$e@f`}, Values: []string{"1"}}}},
		{"url in value", "(eq,callbackUri,http://127.0.0.1:9999/notify?a=b)", []Term{{Op: OpEq, Path: []string{"callbackUri"}, Values: []string{"http://127.0.0.1:9999/notify?a=b"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFilter(tt.in)
			if err != nil {
				t.Fatalf("ParseFilter(%q): %v", tt.in, err)
			}
			got := stripOffsets(f.Terms)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseFilter(%q)\n got %#v\nwant %#v", tt.in, got, tt.want)
			}
		})
	}
}

func stripOffsets(ts []Term) []Term {
	out := make([]Term, len(ts))
	for i, t := range ts {
		t.Offset = 0
		out[i] = t
	}
	return out
}

func TestParseFilterOffsets(t *testing.T) {
	f, err := ParseFilter("(eq,a,1);(in,b,'x,y',z);(cont,c,q)")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 9, 24}
	for i, term := range f.Terms {
		if term.Offset != want[i] {
			t.Errorf("term %d offset = %d, want %d", i, term.Offset, want[i])
		}
	}
}

func TestParseFilterErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		offset int
		msg    string // substring of Error()
	}{
		{"empty", "", 0, "filter is empty"},
		{"no paren", "eq,a,1", 0, "expected '(' but found 'e'"},
		{"unknown operator", "(equal,id,1)", 1, `unknown operator "equal" at offset 1; use one of eq, neq, gt, gte, lt, lte, in, nin, cont, ncont`},
		{"upper case operator", "(EQ,id,1)", 1, `operators are lower case: use "eq"`},
		{"missing operator", "(,id,1)", 1, "missing operator"},
		{"operator only", "(eq)", 3, "missing attribute after operator eq"},
		{"unterminated after op", "(eq", 3, "missing ')'"},
		{"empty attribute", "(eq,,1)", 4, "empty attribute name"},
		{"empty segment", "(eq,a//b,1)", 6, `empty segment in attribute path "a//b"`},
		{"trailing slash", "(eq,a/,1)", 6, "empty segment"},
		{"quote in attribute", "(eq,a'b,1)", 5, `invalid character '\'' in attribute name`},
		{"missing value", "(eq,a)", 5, "missing value for operator eq"},
		{"missing value for in", "(in,a)", 5, "missing value for operator in"},
		{"two values for eq", "(eq,a,1,2)", 8, "operator eq takes exactly one value"},
		{"comma hint", "(eq,a,x,y)", 8, "put a value that contains ',' in single quotes"},
		{"two values for gt", "(gt,a,1,2)", 8, "operator gt takes exactly one value"},
		{"empty value", "(eq,a,)", 6, "empty value at offset 6; write '' for an empty string"},
		{"empty value among many", "(in,a,x,,y)", 8, "empty value"},
		{"unterminated", "(eq,a,1", 7, "filter: missing ')' at offset 7; close the expression that starts at offset 0"},
		{"unterminated second", "(eq,a,1);(eq,b,2", 16, "starts at offset 9"},
		{"unterminated quote", "(eq,a,'abc)", 6, "unterminated quoted value"},
		{"unterminated quote doubled", "(eq,a,'abc'')", 6, "unterminated quoted value"},
		{"text after quote", "(eq,a,'abc'x)", 11, "unexpected 'x' after quoted value"},
		{"bare quote", "(eq,a,O'Brien)", 7, "quote character inside an unquoted value at offset 7; put the whole value in single quotes and double the quote, e.g. 'O''Brien'"},
		{"semicolon in value", "(eq,a,b;(eq,c,d))", 7, "';' inside the expression that starts at offset 0"},
		{"paren in value", "(eq,a,b(c)", 7, "'(' inside an unquoted value"},
		{"trailing semicolon", "(eq,a,1);", 9, "filter ends with ';'"},
		{"missing semicolon", "(eq,a,1)(eq,b,2)", 8, "unexpected '(' after ')'"},
		{"garbage after", "(eq,a,1)x", 8, "unexpected 'x' after ')'"},
		{"space between terms", "(eq,a,1); (eq,b,2)", 9, "expected '(' but found ' '"},
		{"invalid utf8", "(eq,a,\xff)", 6, "invalid UTF-8"},
		{"nul", "(eq,a,x\x00)", 7, "NUL character"},
		{"too long", "(eq,a," + strings.Repeat("x", MaxFilterBytes) + ")", MaxFilterBytes, "more than the limit of 8192"},
		{"too many terms", strings.Repeat("(eq,a,1);", MaxTerms) + "(eq,a,1)", 9 * MaxTerms, "more than 64 expressions"},
		{"path too deep", "(eq," + strings.Repeat("a/", MaxPathDepth) + "a,1)", 4 + 2*MaxPathDepth, "more than 16 segments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFilter(tt.in)
			if err == nil {
				t.Fatalf("ParseFilter(%q) = %v, want error", tt.in, f)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not *ParseError: %v", err, err)
			}
			if pe.Offset != tt.offset {
				t.Errorf("offset = %d, want %d (%v)", pe.Offset, tt.offset, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err.Error(), tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "filter: ") {
				t.Errorf("error %q does not start with \"filter: \"", err.Error())
			}
		})
	}
}

func TestParseFilterLimitsAccepted(t *testing.T) {
	// Exactly at the limits is fine.
	terms := strings.TrimSuffix(strings.Repeat("(eq,a,1);", MaxTerms), ";")
	if _, err := ParseFilter(terms); err != nil {
		t.Errorf("%d terms: %v", MaxTerms, err)
	}
	long := "(eq,a," + strings.Repeat("x", MaxFilterBytes-len("(eq,a,)")) + ")"
	if _, err := ParseFilter(long); err != nil {
		t.Errorf("%d bytes: %v", len(long), err)
	}
	deep := "(eq," + strings.TrimSuffix(strings.Repeat("a/", MaxPathDepth), "/") + ",1)"
	if _, err := ParseFilter(deep); err != nil {
		t.Errorf("depth %d: %v", MaxPathDepth, err)
	}
}

func TestFilterString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"(eq,id,abc)", "(eq,id,abc)"},
		{"(in,a,'x',y,'z')", "(in,a,x,y,z)"},
		{"(eq,a,'x,y')", "(eq,a,'x,y')"},
		{"(eq,a,'O''Brien')", "(eq,a,'O''Brien')"},
		{"(eq,a,'(x;y)')", "(eq,a,'(x;y)')"},
		{"(eq,a,'')", "(eq,a,'')"},
		{"(eq,a/b/c,1);(cont,d,' e ')", "(eq,a/b/c,1);(cont,d, e )"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			f, err := ParseFilter(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
	var nilFilter *Filter
	if nilFilter.String() != "" {
		t.Error("nil filter String() is not empty")
	}
}
