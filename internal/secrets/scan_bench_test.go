package secrets

import "testing"

// BenchmarkScanOperationParams measures the scans an operation makes of its
// request (sealing it, and the values its run scrubs): the engine bench's
// instantiate request with a password.
func BenchmarkScanOperationParams(b *testing.B) {
	key, _ := ParseKey(NewKey())
	box, _ := NewBox(key)
	raw := []byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"vim-bench","vimType":"ETSINFV.OPENSTACK_KEYSTONE.V_3"}],"additionalParams":{"password":"node-pass-456"}}`)
	b.ReportAllocs()
	for b.Loop() {
		sealed, err := box.SealJSON(raw, Place{Row: "op", Path: "operation_params"})
		if err != nil {
			b.Fatal(err)
		}
		if v := ValuesJSON(raw); len(v) != 1 || len(sealed) == len(raw) {
			b.Fatalf("values %q", v)
		}
	}
}
