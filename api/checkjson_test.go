package api

import (
	"strings"
	"testing"
)

// checkJSON's fast path (json.Valid and a scan of the numbers) accepts
// exactly what decoding the body accepts, and its errors are the decoder's.
func TestCheckJSONAgreesWithDecoding(t *testing.T) {
	for _, body := range []string{
		`{}`, `[]`, `"x"`, `0`, `-0.5e3`, `{"a":[1,2.5,-3e2,true,null,"s"]}`,
		`{"n":1e999999}`, `{"n":-1e400}`, `{"n":1e308}`, `{"n":1E309}`, `[1e-999999]`,
		`{"n":` + strings.Repeat("9", 400) + `}`, `{"n":` + strings.Repeat("9", 300) + `}`,
		`{"s":"1e999999"}`, `{"s":"\"1e999999"}`, `{"s":"\\","n":1e999}`, `{"1e999":1}`,
		`{"a":1} {"b":2}`, `{"a":1}   `, `{"a":`, `{"a":1,}`, `{"a":01}`, `[` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `]`,
		"{\"a\":\n 1e999}", `{"a":"\u00e9 1e999"}`,
	} {
		got, want := checkJSON([]byte(body)), decodeCheck([]byte(body))
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Errorf("%.60s: checkJSON says %v, decoding says %v", body, got, want)
		}
	}
	if checkJSON([]byte(`{"n":1e999999}`)) == nil {
		t.Error("a number out of float64's range was accepted")
	}
}
