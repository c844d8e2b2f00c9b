package sol013

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	root := testRoot(t)
	tests := []struct {
		filter string
		msg    string // "" means valid
	}{
		{"(eq,id,x)", ""},
		{"(gt,createdAt,2024-01-01T00:00:00Z)", ""},
		{"(eq,createdAt,2024-01-01T00:00:00.123456789+05:30)", ""},
		{"(eq,createdAt,2024-01-01T00:00:00 05:30)", ""}, // '+' sent unencoded arrives as a space
		{"(in,updatedAt,2024-01-01T00:00:00Z,2024-01-02T00:00:00Z)", ""},
		{"(eq,createdAt,2024-01-01)", `value "2024-01-01" is not an RFC 3339 date-time; attribute "createdAt" is compared as an instant`},
		{"(gt,createdAt,yesterday)", `value "yesterday" is not an RFC 3339 date-time`},
		{"(cont,createdAt,2024)", `operator cont cannot be used on the date-time attribute "createdAt"`},
		{"(cont,vnfInstanceName,x)", ""},
		{"(in,size,1,2,-3.5e2)", ""},
		{"(lte,ratio,0.5)", ""},
		{"(eq,enabled,true)", ""},
		{"(nin,enabled,true,false)", ""},
		{"(eq,tags,a)", ""},
		{"(gt,scores,1)", ""},
		{"(eq,vimConnectionInfo/vimType,OPENSTACK)", ""},
		{"(eq,vimConnectionInfo/accessInfo/region,RegionOne)", ""},
		{"(cont,metadata/owner,x);(gt,metadata/n,abc)", ""},
		{"(eq,extensions/a/b/c,1)", ""},
		{"(eq,instantiatedVnfInfo/vnfcResourceInfo/computeResource/resourceId,r)", ""},

		{"(eq,idd,x)", `filter: unknown attribute "idd"; valid top-level attributes are _links, createdAt,`},
		{"(eq,id,x);(eq,instantiatedVnfInfo/flavour,x)", `unknown attribute "instantiatedVnfInfo/flavour"; valid attributes of "instantiatedVnfInfo" are flavourId, scaleStatus, vnfState, vnfcResourceInfo (in the expression at offset 10)`},
		{"(eq,id/x,1)", `attribute "id" is a string and has no attribute "x"`},
		{"(eq,instantiatedVnfInfo,x)", `attribute "instantiatedVnfInfo" is an object and cannot be compared; filter on one of its attributes, e.g. instantiatedVnfInfo/flavourId`},
		{"(eq,vimConnectionInfo,x)", `attribute "vimConnectionInfo" is an object`},
		{"(eq,metadata,x)", `e.g. metadata/<key>`},
		{"(gt,enabled,true)", `operator gt cannot be used on the boolean attribute "enabled"; use eq, neq, in or nin`},
		{"(cont,enabled,t)", `operator cont cannot be used on the boolean attribute`},
		{"(eq,enabled,yes)", `value "yes" is not a boolean; attribute "enabled" takes true or false`},
		{"(in,enabled,true,TRUE)", `value "TRUE" is not a boolean`},
		{"(eq,size,ten)", `value "ten" is not a number; attribute "size" is numeric`},
		{"(in,scores,1,x)", `value "x" is not a number`},
		{"(gt,size,1e1001)", `value "1e1001" is not a number`}, // beyond what we accept as numeric
		{"(gt,size,01)", `value "01" is not a number`},         // JSON number syntax
		{"(ncont,size,1)", `operator ncont works on strings but "size" is a number`},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			f, err := ParseFilter(tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			err = f.Validate(root)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v (%T), want *ValidationError", err, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}

func TestValidateNilRootAndFilter(t *testing.T) {
	f, _ := ParseFilter("(gt,whatever/deep,abc)")
	if err := f.Validate(nil); err != nil {
		t.Errorf("nil root: %v", err)
	}
	var nf *Filter
	if err := nf.Validate(testRoot(t)); err != nil {
		t.Errorf("nil filter: %v", err)
	}
}
