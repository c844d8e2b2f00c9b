package store

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// renderRowDecoded is how renderRow rendered before it spliced the
// columns: decode them into the instance, encode it, decode that with
// numbers as written, mask, encode.
func renderRowDecoded(t *testing.T, in *model.VnfInstance, docs [][]byte) []byte {
	t.Helper()
	row := *in
	row.VnfConfigurableProperties, row.VimConnectionInfo, row.InstantiatedVnfInfo, row.Metadata, row.Extensions = nil, nil, nil, nil, nil
	for _, s := range []*string{&row.ID, &row.VnfPkgID} { // uuid columns read back canonical
		if u, err := uuid.Parse(*s); err == nil {
			*s = u.String()
		}
	}
	if err := decodeDocs(&row, docs); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&row)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(secrets.MaskDoc(v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func decoded[T any](t *testing.T, raw string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The document the finishes and CreateInstance render is, byte for byte,
// the one they rendered by decoding the columns and masking the decoded
// document — for instances with secrets in vimConnectionInfo, metadata and
// extensions (sealed and plain), numbers of every kind, strings that need
// escaping, odd keys, and none of the documents.
func TestRenderRowIsTheDecodedRendering(t *testing.T) {
	info := decoded[*model.InstantiatedVnfInfo](t, `{"flavourId":"ha","vnfState":"STARTED",
		"scaleStatus":[{"aspectId":"worker","scaleLevel":3}],
		"extCpInfo":[{"id":"cp","cpdId":"c","cpProtocolInfo":[{"layerProtocol":"IP_OVER_ETHERNET","ipOverEthernet":{"macAddress":"fa:16","ipAddresses":[{"type":"IPV4","addresses":["10.0.0.5"]}]}}],"metadata":{"token":"cp-tok"}}],
		"extVirtualLinkInfo":[{"id":"ext","resourceHandle":{"resourceId":"net"},"extLinkPorts":[{"id":"p","resourceHandle":{"resourceId":"port"}}]}],
		"extManagedVirtualLinkInfo":[{"id":"m","vnfVirtualLinkDescId":"d","networkResource":{"resourceId":"n"},"vnfLinkPorts":[{"id":"lp","x":1}]}],
		"monitoringParameters":[{"id":"mp","value":0.25}],
		"vnfcResourceInfo":[{"id":"c1","vduId":"master","computeResource":{"vimConnectionId":"v","resourceId":"srv","vimLevelResourceType":"OS::Nova::Server"},
			"vnfcCpInfo":[{"id":"cp1","cpdId":"c","metadata":{"ssh_host_key":"AAA","fingerprint":"SHA256:x"}}],"metadata":{"createdAt":"2026-11-26T16:00:00Z","n":1e-7,"big":1e21,"neg":-0.5}}],
		"additionalParams":{"k8s_cluster_installation_param":{"master_node":{"password":"enc:v3:k:abc","username":"ubuntu"},"ssh_cp_name":"m<&>"},"count":12}}`)
	vci := decoded[[]model.VimConnectionInfo](t, `[{"id":"v","vimId":"vim-1","vimType":"openstack",
		"interfaceInfo":{"endpoint":"https://keystone:5000/v3","ssl_ca_cert":"-----BEGIN-----\n"},
		"accessInfo":{"username":"admin","password":"enc:v3:key:c2VhbGVk","region":"RegionOne","project":"p","userDomain":"Default","bearer_token":"plain-token"},
		"extra":{"dummy":"d","secret_x":{"deep":[1,2]},"apiKey":null}}]`)
	md := decoded[map[string]any](t, `{"api_token":"md-tok","tier":"gold","n":1.5,"int":42,"big":12345678901234,"bigger":12345678901234567890,
		"list":[{"clientSecret":"s"},"x",null,true],"esc":"line\nbreak \u2028 <b>&amp;</b> \"q\" \\ é 😀","<key>":1,"a&b":{"credentials":[]}}`)
	ext := decoded[map[string]any](t, `{"VimConnectionInfo":{"password":"ext-pw"},"flag":false,"nothing":null,"empty":{},"arr":[]}`)
	base := model.VnfInstance{ID: "6F1E2D3C-0000-4000-8000-000000000001", VnfInstanceName: "k8s <&>", VnfInstanceDescription: "d\u2028",
		VnfdID: "vnfd", VnfProvider: "Company", VnfProductName: "Sample", VnfSoftwareVersion: "1.0", VnfdVersion: "1.0",
		VnfPkgID: "0aaa0000-0000-4000-8000-00000000000b", InstantiationState: model.Instantiated}
	full := base
	full.VnfConfigurableProperties = map[string]any{"isAutoscaleEnabled": true, "password": "vcp-pw"}
	full.VimConnectionInfo, full.InstantiatedVnfInfo, full.Metadata, full.Extensions = vci, info, md, ext
	// In memory, before any round trip: an int64 beyond float64's integers
	// and a time (both written otherwise once decoded).
	odd := full
	odd.Metadata = map[string]any{"nanos": int64(1) << 60, "at": time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), "f32": float32(0.1)}
	bare := base
	bare.InstantiationState, bare.VnfInstanceName, bare.VnfPkgID = model.NotInstantiated, "", "not-a-uuid"
	empties := base
	empties.Metadata, empties.VimConnectionInfo, empties.Extensions = map[string]any{}, []model.VimConnectionInfo{}, map[string]any{"": ""}
	cases := map[string]*model.VnfInstance{"full": &full, "odd numbers": &odd, "bare": &bare, "empty documents": &empties}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		in := full
		in.Metadata = map[string]any{}
		for k, v := range md {
			if r.IntN(2) == 0 {
				in.Metadata[k] = v
			}
		}
		in.Metadata["r"] = r.NormFloat64() * []float64{1, 1e-9, 1e9, 1e22}[i%4]
		in.Metadata["i"] = r.Int64N(1 << 55)
		if r.IntN(3) == 0 {
			in.InstantiatedVnfInfo = nil
		}
		cases["random"+string(rune('a'+i%26))+string(rune('a'+i/26))] = &in
	}
	for name, in := range cases {
		args, err := instanceUpdateArgs(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The attributes encoded by the caller (Finish.Docs) make the same
		// arguments, whichever of them are given.
		var given InstanceDocs
		for k, v := range []any{in.VnfConfigurableProperties, in.VimConnectionInfo, in.InstantiatedVnfInfo, in.Metadata, in.Extensions} {
			if r.IntN(4) != 0 {
				given[k], _ = json.Marshal(v)
			}
		}
		if again, err := instanceUpdateArgs(in, &given); err != nil || !reflect.DeepEqual(again, args) {
			t.Fatalf("%s: given %q:\n%q (%v)\nwant\n%q", name, given, again, err, args)
		}
		docs := [][]byte{args[10].([]byte), args[11].([]byte), args[12].([]byte), args[13].([]byte), args[14].([]byte)}
		want := renderRowDecoded(t, in, docs)
		if got := args[15].([]byte); !bytes.Equal(got, want) {
			t.Fatalf("%s: rendered\n%s\ndecoding the columns rendered\n%s", name, got, want)
		}
		for _, secret := range []string{"c2VhbGVk", "plain-token", "enc:v3", "md-tok", "ext-pw", "vcp-pw", "cp-tok", `"s"`} {
			if bytes.Contains(want, []byte(secret)) {
				t.Fatalf("%s: %s in %s", name, secret, want)
			}
		}
	}
}
