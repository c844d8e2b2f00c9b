package sol013

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

func decodeDoc(t testing.TB, s string, useNumber bool) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	if useNumber {
		d.UseNumber()
	}
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}

func TestMatch(t *testing.T) {
	tests := []struct {
		name   string
		doc    string
		filter string
		want   bool
	}{
		// Strings.
		{"eq string", `{"a":"x"}`, "(eq,a,x)", true},
		{"eq string other", `{"a":"x"}`, "(eq,a,y)", false},
		{"eq is case sensitive", `{"a":"x"}`, "(eq,a,X)", false},
		{"eq quoted value", `{"a":"O'Brien, Jr."}`, "(eq,a,'O''Brien, Jr.')", true},
		{"eq empty string", `{"a":""}`, "(eq,a,'')", true},
		{"neq string", `{"a":"x"}`, "(neq,a,y)", true},
		{"neq same", `{"a":"x"}`, "(neq,a,x)", false},
		{"in", `{"a":"B"}`, "(in,a,A,B)", true},
		{"in none", `{"a":"C"}`, "(in,a,A,B)", false},
		{"nin", `{"a":"C"}`, "(nin,a,A,B)", true},
		{"nin hit", `{"a":"A"}`, "(nin,a,A,B)", false},
		{"cont", `{"a":"hello world"}`, "(cont,a,lo w)", true},
		{"cont several", `{"a":"hello"}`, "(cont,a,xyz,ell)", true},
		{"cont empty matches any string", `{"a":"x"}`, "(cont,a,'')", true},
		{"ncont", `{"a":"hello"}`, "(ncont,a,xyz)", true},
		{"ncont hit", `{"a":"hello"}`, "(ncont,a,xyz,ell)", false},
		{"cont unicode", `{"a":"日本語"}`, "(cont,a,本)", true},
		{"gt string lexical", `{"a":"b"}`, "(gt,a,a)", true},
		{"gt string bytewise upper < lower", `{"a":"B"}`, "(gt,a,a)", false},
		{"gt timestamp", `{"t":"2024-05-01T10:00:00Z"}`, "(gt,t,2024-04-30T23:59:59Z)", true},
		{"lt timestamp", `{"t":"2024-05-01T10:00:00Z"}`, "(lt,t,2024-04-30T23:59:59Z)", false},
		{"gte equal", `{"a":"m"}`, "(gte,a,m)", true},
		{"lte equal", `{"a":"m"}`, "(lte,a,m)", true},
		{"string that looks numeric compares lexically", `{"a":"10"}`, "(gt,a,9)", false},
		{"string eq numeric text", `{"a":"10"}`, "(eq,a,10)", true},
		{"string eq other numeric spelling", `{"a":"10"}`, "(eq,a,10.0)", false},

		// Numbers.
		{"eq number", `{"n":10}`, "(eq,n,10)", true},
		{"eq number other spelling", `{"n":10}`, "(eq,n,1e1)", true},
		{"eq number decimal", `{"n":1.50}`, "(eq,n,1.5)", true},
		{"eq negative zero", `{"n":-0}`, "(eq,n,0)", true},
		{"eq number vs text", `{"n":10}`, "(eq,n,ten)", false},
		{"gt number numeric not lexical", `{"n":10}`, "(gt,n,9)", true},
		{"lt negative", `{"n":-2}`, "(lt,n,-1.5)", true},
		{"gte", `{"n":3}`, "(gte,n,3)", true},
		{"lte", `{"n":3}`, "(lte,n,2.999)", false},
		{"gt non-numeric value", `{"n":3}`, "(gt,n,abc)", false},
		{"big exact", `{"n":12345678901234567890}`, "(eq,n,12345678901234567891)", false},
		{"big exact eq", `{"n":12345678901234567890}`, "(eq,n,12345678901234567890)", true},
		{"tiny exact", `{"n":0.1000000000000000000001}`, "(gt,n,0.1)", true},
		{"in numbers", `{"n":2}`, "(in,n,1,2.0,3)", true},
		{"cont on number never matches", `{"n":123}`, "(cont,n,2)", false},
		{"ncont on number matches", `{"n":123}`, "(ncont,n,2)", true},

		// Booleans and null.
		{"eq true", `{"b":true}`, "(eq,b,true)", true},
		{"eq false", `{"b":false}`, "(eq,b,true)", false},
		{"in bool", `{"b":false}`, "(in,b,true,false)", true},
		{"bool vs TRUE", `{"b":true}`, "(eq,b,TRUE)", false},
		{"gt on bool", `{"b":true}`, "(gt,b,false)", false},
		{"null eq", `{"a":null}`, "(eq,a,null)", false},
		{"null neq", `{"a":null}`, "(neq,a,x)", true},

		// Missing attributes.
		{"eq missing", `{}`, "(eq,a,x)", false},
		{"neq missing", `{}`, "(neq,a,x)", true},
		{"in missing", `{}`, "(in,a,x)", false},
		{"nin missing", `{}`, "(nin,a,x)", true},
		{"cont missing", `{}`, "(cont,a,x)", false},
		{"ncont missing", `{}`, "(ncont,a,x)", true},
		{"gt missing", `{}`, "(gt,a,x)", false},
		{"missing parent", `{"p":{}}`, "(neq,p/q/r,x)", true},

		// Objects are not values.
		{"eq object", `{"a":{"x":1}}`, "(eq,a,x)", false},
		{"neq object", `{"a":{"x":1}}`, "(neq,a,x)", true},

		// Arrays.
		{"array of strings any", `{"tags":["a","b"]}`, "(eq,tags,b)", true},
		{"array of strings none", `{"tags":["a","b"]}`, "(eq,tags,c)", false},
		{"neq array: no element equal", `{"tags":["a","b"]}`, "(neq,tags,c)", true},
		{"neq array: some element equal", `{"tags":["a","b"]}`, "(neq,tags,a)", false},
		{"empty array", `{"tags":[]}`, "(eq,tags,a)", false},
		{"empty array neq", `{"tags":[]}`, "(neq,tags,a)", true},
		{"cont in array", `{"tags":["xyz","abc"]}`, "(cont,tags,bc)", true},
		{"gt in array", `{"s":[1,5]}`, "(gt,s,4)", true},
		{"array of objects", `{"v":[{"t":"A"},{"t":"B"}]}`, "(eq,v/t,B)", true},
		{"array of objects missing member", `{"v":[{"t":"A"},{}]}`, "(neq,v/t,A)", false},
		{"array with non-object elements", `{"v":["t",{"t":"B"}]}`, "(eq,v/t,B)", true},
		{"arrays at two levels", `{"a":[{"b":[{"c":"q"}]}]}`, "(eq,a/b/c,q)", true},
		{"leaf array of arrays", `{"m":[["x"],["y"]]}`, "(eq,m,y)", true},
		{"leaf three-level nesting is not unwrapped", `{"m":[[["x"]]]}`, "(eq,m,x)", false},
		{"intermediate nested array is not walked", `{"a":[[{"b":"x"}]]}`, "(eq,a/b,x)", false},

		// Several terms are ANDed.
		{"and both", `{"a":"x","n":1}`, "(eq,a,x);(eq,n,1)", true},
		{"and one fails", `{"a":"x","n":1}`, "(eq,a,x);(eq,n,2)", false},
	}
	for _, tt := range tests {
		for _, useNumber := range []bool{true, false} {
			name := tt.name
			if !useNumber {
				name += "/float64"
				if tt.name == "big exact" || tt.name == "big exact eq" || tt.name == "tiny exact" {
					continue // float64 documents cannot keep that precision
				}
			}
			t.Run(name, func(t *testing.T) {
				f, err := ParseFilter(tt.filter)
				if err != nil {
					t.Fatal(err)
				}
				if got := f.Match(decodeDoc(t, tt.doc, useNumber)); got != tt.want {
					t.Errorf("%s on %s = %v, want %v", tt.filter, tt.doc, got, tt.want)
				}
			})
		}
	}
	var nf *Filter
	if !nf.Match(map[string]any{}) {
		t.Error("nil filter does not match")
	}
}

func TestDecimal(t *testing.T) {
	tests := []struct {
		a, b string
		cmp  int
	}{
		{"0", "-0", 0},
		{"0.0", "0e10", 0},
		{"1", "1.000", 0},
		{"100", "1e2", 0},
		{"0.001", "1E-3", 0},
		{"9", "10", -1},
		{"-9", "-10", 1},
		{"-1", "0", -1},
		{"0.5", "0.49999", 1},
		{"123.456", "123.4561", -1},
		{"1e1000", "9e999", 1},
		{"-1e-1000", "0", -1},
	}
	for _, tt := range tests {
		a, ok1 := filterNumber(tt.a)
		b, ok2 := filterNumber(tt.b)
		if !ok1 || !ok2 {
			t.Fatalf("parse %q/%q failed", tt.a, tt.b)
		}
		if c := cmpDecimal(a, b); c != tt.cmp {
			t.Errorf("cmp(%s, %s) = %d, want %d", tt.a, tt.b, c, tt.cmp)
		}
	}
	for _, bad := range []string{"", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x10", "NaN", "Inf", "1_0", " 1", "1e1001"} {
		if _, ok := filterNumber(bad); ok {
			t.Errorf("filterNumber(%q) accepted", bad)
		}
	}
}

// TestMatchInstants: a date-time attribute matches the same instant however
// it is written (fractional digits, offset), once the filter is validated.
func TestMatchInstants(t *testing.T) {
	root := testRoot(t)
	docs := map[string]string{
		"go":      `{"createdAt":"2024-01-15T10:00:00.1Z"}`,
		"six":     `{"createdAt":"2024-01-15T10:00:00.100000Z"}`,
		"offset":  `{"createdAt":"2024-01-15T11:00:00.1+01:00"}`,
		"other":   `{"createdAt":"2024-01-15T10:00:00.2Z"}`,
		"garbage": `{"createdAt":"soon"}`,
		"none":    `{}`,
	}
	tests := []struct {
		filter string
		want   []string
	}{
		{"(eq,createdAt,2024-01-15T10:00:00.1Z)", []string{"go", "offset", "six"}},
		{"(eq,createdAt,2024-01-15T10:00:00.100000Z)", []string{"go", "offset", "six"}},
		{"(eq,createdAt,2024-01-15T05:00:00.1-05:00)", []string{"go", "offset", "six"}},
		{"(neq,createdAt,2024-01-15T10:00:00.1Z)", []string{"garbage", "none", "other"}},
		{"(gt,createdAt,2024-01-15T10:00:00.1Z)", []string{"other"}},
		{"(lte,createdAt,2024-01-15T10:00:00.10000001Z)", []string{"go", "offset", "six"}},
		{"(in,createdAt,2024-01-15T10:00:00.2Z,2020-01-01T00:00:00Z)", []string{"other"}},
	}
	for _, tt := range tests {
		f, err := ParseFilter(tt.filter)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Validate(root); err != nil {
			t.Fatal(err)
		}
		var got []string
		for name, d := range docs {
			if f.Match(decodeDoc(t, d, true)) {
				got = append(got, name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s matched %v, want %v", tt.filter, got, tt.want)
		}
	}
}
