package secrets

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// maskDecoded is what MaskJSON did before AppendMasked: decode (numbers as
// written), MaskDoc, encode.
func maskDecoded(raw []byte) ([]byte, error) {
	v, err := decodeNumbers(raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(MaskDoc(v))
}

var maskedCases = []string{
	`{}`, `[]`, `null`, `"x"`, `1.50`, `-0`, `1E+2`, `true`, ` { "b" : 1 , "a" : [ 1 , { } , [ ] ] } `,
	`{"password":"p","Pass_Word":{"x":1},"apiKey":[1,2],"token":null,"secret":false,"ok":"v"}`,
	`{"metadata":{"db_password":"p","nested":[{"client-secret":"s","n":1e-7}]},"vimConnectionInfo":[{"accessInfo":{"password":"enc:v3:k:abc","username":"u"}}]}`,
	`{"a":1,"a":2,"b":{"x":1},"b":null,"a":3}`,
	`{"\u0062":1,"a":2,"\u0061b":3,"a\"q":4,"<k>":5,"&":6,"é":7,"\u00e9x":8,"tok\u0065n":"hidden"}`,
	`{"s":"\u0041\n\t\u2028\u2029<&>\"\\/\ud83d\ude00\ud800x","raw":"é😀","del":"a` + "\x7f" + `b","bad":"` + "\xff\xfe" + `"}`,
	`{"` + "\xff" + `":1,"passwörd":"x","PASSWORD":"y","a":{"b":{"c":{"d":{"secretValue":{"e":1}}}}}}`,
	`[{"z":1,"y":[{"x":null,"w":"\u003c"}]},"s",3,null,{"credentials":[]}]`,
}

// AppendMasked (and so MaskJSON) makes the bytes decoding, masking and
// encoding made, for every kind of JSON value, key and string.
func TestAppendMaskedIsMaskDoc(t *testing.T) {
	forTestDocs(2000, 1, func(raw []byte) { checkMasked(t, raw) })
}

// forTestDocs calls f with each of maskedCases, then n random documents
// (seeded), a third of them indented.
func forTestDocs(n int, seed uint64, f func(raw []byte)) {
	for _, c := range maskedCases {
		f([]byte(c))
	}
	r := rand.New(rand.NewPCG(seed, seed+1))
	for range n {
		raw, _ := json.Marshal(randomDoc(r, 0))
		if r.IntN(3) == 0 {
			var b bytes.Buffer
			_ = json.Indent(&b, raw, " ", "\t")
			raw = b.Bytes()
		}
		f(raw)
	}
}

func checkMasked(t *testing.T, raw []byte) {
	t.Helper()
	want, err := maskDecoded(raw)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	got, err := AppendMasked([]byte("x"), raw)
	if err != nil || !bytes.Equal(got, append([]byte("x"), want...)) {
		t.Fatalf("%s:\nAppendMasked %s (%v)\nwant         %s", raw, got, err, want)
	}
	if got, err := MaskJSON(raw); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: MaskJSON %s (%v)", raw, got, err)
	}
}

var randomKeys = []string{"a", "b", "id", "name", "password", "apiKey", "x_token", "Client-Secret", "<a>", "k&v",
	"é", "\u2028", "a\"b", "A", "aa", "credentials", "sshKey", "value", "enc"}

func randomDoc(r *rand.Rand, depth int) any {
	n := r.IntN(10)
	if depth > 4 {
		n = 6 + r.IntN(4)
	}
	switch {
	case n < 3:
		m := map[string]any{}
		for range r.IntN(6) {
			m[randomKeys[r.IntN(len(randomKeys))]+strings.Repeat("_", r.IntN(2))] = randomDoc(r, depth+1)
		}
		return m
	case n < 5:
		var l []any
		for range r.IntN(4) {
			l = append(l, randomDoc(r, depth+1))
		}
		return l
	case n == 6:
		return r.NormFloat64() * 1e6
	case n == 7:
		return nil
	case n == 8:
		return r.IntN(2) == 0
	default:
		return randomKeys[r.IntN(len(randomKeys))] + "\x01 \\ / \u00ff"[:r.IntN(9)]
	}
}

// What is not JSON is an error, as before.
func TestMaskJSONRefusesWhatIsNotJSON(t *testing.T) {
	for _, c := range []string{`{`, `{"a":}`, `[1,]`, `{"a" 1}`, `"x`, `{"a":1}}`, `nul`, `{"a":1,}`} {
		if got, err := MaskJSON([]byte(c)); err == nil {
			t.Errorf("%s: %s", c, got)
		}
	}
}

func FuzzAppendMasked(f *testing.F) {
	for _, c := range maskedCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, err := maskDecoded(raw)
		if err != nil || !json.Valid(raw) {
			return
		}
		got, err := AppendMasked(nil, raw)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q:\nAppendMasked %s (%v)\nwant         %s", raw, got, err, want)
		}
	})
}

// deepDoc nests depth objects (keys out of order, a duplicate, a secret and
// an array at every few levels) around leaf.
func deepDoc(depth int, leaf string) string {
	var b strings.Builder
	for i := range depth {
		switch i % 4 {
		case 0:
			b.WriteString(`{"z":1,"a":"x","z":2,"next":`)
		case 1:
			b.WriteString(`{"password":{"deep":[1,{"k":"v"}]},"next":[`)
		case 2:
			b.WriteString(`{"next":`)
		case 3:
			b.WriteString(`{"b":null,"token":null,"api_key":"s","next":`)
		}
	}
	b.WriteString(leaf)
	for i := depth - 1; i >= 0; i-- {
		switch i % 4 {
		case 1:
			b.WriteString(`],"m":{}}`)
		case 2:
			b.WriteString(`,"a":[{"b":1,"a":2}]}`)
		default:
			b.WriteString(`}`)
		}
	}
	return b.String()
}

// Deep documents (past the depth where container ends are remembered, and
// as deep as encoding/json decodes) mask to the same bytes.
func TestAppendMaskedDeepDocuments(t *testing.T) {
	for _, depth := range []int{memoDepth - 1, memoDepth, memoDepth + 1, 40, 3000, 7000} {
		for _, leaf := range []string{`"x"`, `{"b":"\u00e9","a":[{"secret":1}]}`, `[]`} {
			raw := []byte(deepDoc(depth, leaf))
			if !json.Valid(raw) {
				t.Fatalf("depth %d: test document is not JSON", depth)
			}
			checkMasked(t, raw)
		}
	}
	raw := []byte(strings.Repeat(`{"a":`, 9000) + `"x"` + strings.Repeat("}", 9000))
	checkMasked(t, raw)
}

// The cost of masking grows with the document, not with its size times its
// depth (an object's members are found before they are written).
func BenchmarkAppendMaskedDeep(b *testing.B) {
	raw := []byte(deepDoc(7000, `"x"`))
	b.SetBytes(int64(len(raw)))
	dst := make([]byte, 0, len(raw))
	for b.Loop() {
		if _, err := AppendMasked(dst[:0], raw); err != nil {
			b.Fatal(err)
		}
	}
}

// Masking a document into a buffer large enough allocates nothing once warm:
// the member stack each object level sorts is kept between calls.
func TestAppendMaskedReusesItsStack(t *testing.T) {
	raw := []byte(`{"vimConnectionInfo":[{"id":"v","vimType":"k","accessInfo":{"password":"p","username":"u"},` +
		`"interfaceInfo":{"endpoint":"https://x"}}],"instantiatedVnfInfo":{"flavourId":"simple","vnfState":"STARTED",` +
		`"vnfcResourceInfo":[{"id":"a","vduId":"vdu1"},{"id":"b","vduId":"vdu2"}],"extCpInfo":[]},"metadata":{"a":1,"b":2,"c":3}}`)
	dst := make([]byte, 0, 2*len(raw))
	n := testing.AllocsPerRun(200, func() {
		if _, err := AppendMasked(dst, raw); err != nil {
			t.Fatal(err)
		}
	})
	if n > 2 { // 0 (1 with the race detector); a stack grown at every call was 5
		t.Errorf("AppendMasked allocated %.1f times per call", n)
	}
}
