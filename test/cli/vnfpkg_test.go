package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg/vnfpkgtest"
)

// waitPackage polls `vnf package show` until the onboarding state is want.
func (c *cli) waitPackage(id, want string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := c.object("vnf", "package", "show", id, "-f", "json")
		if p["Onboarding State"] == want {
			return p
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("package %s stays %v (want %s): %v", id, p["Onboarding State"], want, p)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The Tacker CLI's whole package workflow against the real onboarding of our samples.
func TestVnfPackageCommands(t *testing.T) {
	requireCLI(t)
	srv := startVNFM(t)
	c := newCLI(t, srv.base)

	created := c.object("vnf", "package", "create", "--user-data", "owner=ops", "-f", "json")
	id, _ := created["ID"].(string)
	if id == "" || created["Onboarding State"] != "CREATED" || created["Operational State"] != "DISABLED" {
		t.Fatalf("create: %v", created)
	}
	csar := vnfpkgtest.CSAR(t, "kubeadm-single")
	path := filepath.Join(c.dir, "kubeadm-single.zip")
	if err := os.WriteFile(path, csar, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := c.ok("vnf", "package", "upload", "--path", path, id); !strings.Contains(r.stdout, "has been accepted") {
		t.Fatalf("upload: %s", r)
	}
	p := c.waitPackage(id, "ONBOARDED")
	vnfdID := vnfpkgtest.VnfdIDs["kubeadm-single"]
	if p["VNFD ID"] != vnfdID || p["Operational State"] != "ENABLED" || p["Usage State"] != "NOT_IN_USE" {
		t.Fatalf("onboarded package: %v", p)
	}
	rows := c.list("vnf", "package", "list", "--filter", "(eq,onboardingState,ONBOARDED)", "--all_fields", "-f", "json")
	if len(rows) != 1 || rows[0]["Id"] != id {
		t.Fatalf("list --filter --all_fields: %v", rows)
	}
	c.list("vnf", "package", "list", "--exclude_default", "--fields", "softwareImages", "-f", "json")
	c.list("vnf", "package", "list", "--exclude_fields", "checksum", "-f", "json")

	dl := filepath.Join(c.dir, "dl.zip")
	c.ok("vnf", "package", "download", "--file", dl, id)
	if b, err := os.ReadFile(dl); err != nil || !bytes.Equal(b, csar) {
		t.Fatalf("downloaded package differs from the upload (%v)", err)
	}
	vz := filepath.Join(c.dir, "vnfd.zip")
	c.ok("vnf", "package", "download", "--vnfd", "--file", vz, id)
	b, _ := os.ReadFile(vz)
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil || len(zr.File) < 2 {
		t.Fatalf("VNFD zip: %v (%d files)", err, len(zr.File))
	}
	// A multi-file VNFD is not offered as text: the CLI prints the server's reason.
	c.fail("application/zip", "vnf", "package", "download", "--vnfd", "--type", "text/plain", id)
	art := filepath.Join(c.dir, "art")
	scripts := listScripts(t, csar)
	c.ok("vnf", "package", "artifact", "download", "--file", art, id, scripts[0])
	if got, _ := os.ReadFile(art); len(got) == 0 {
		t.Fatalf("artifact %s is empty", scripts[0])
	}

	inst := c.object("vnflcm", "create", "--name", "from-package", vnfdID, "-f", "json")
	if inst["VNF Provider"] == "" || inst["VNFD ID"] != vnfdID {
		t.Fatalf("instance from the onboarded package: %v", inst)
	}
	if u := c.object("vnf", "package", "show", id, "-f", "json")["Usage State"]; u != "IN_USE" {
		t.Fatalf("usage state with an instance: %v", u)
	}
	upd := c.ok("vnf", "package", "update", "--operational-state", "DISABLED", id, "-f", "value")
	if !strings.Contains(upd.stdout, "DISABLED") {
		t.Fatalf("update: %s", upd)
	}
	c.fail("IN_USE", "vnf", "package", "delete", id)
	c.ok("vnflcm", "delete", inst["ID"].(string))
	if r := c.ok("vnf", "package", "delete", id); !strings.Contains(r.stdout, "deleted successfully") {
		t.Fatalf("delete: %s", r)
	}
	c.fail("does not exist", "vnf", "package", "show", id)
}

func listScripts(t *testing.T, csar []byte) []string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(csar), int64(len(csar)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range zr.File {
		if strings.HasPrefix(f.Name, "Scripts/") && !strings.HasSuffix(f.Name, "/") {
			out = append(out, f.Name)
		}
	}
	if len(out) == 0 {
		t.Fatal("the sample has no Scripts/")
	}
	return out
}

// Hostile CSARs are rejected with a readable reason and leave no rows behind.
func TestHostilePackagesAreRejected(t *testing.T) {
	requireCLI(t)
	srv := startVNFM(t)
	c := newCLI(t, srv.base)
	good := vnfpkgtest.CSAR(t, "kubeadm-single")
	cases := map[string]struct {
		build func() []byte
		want  string
	}{
		"zip slip": {func() []byte {
			return zipOf(t, map[string]string{"../../etc/evil": "x", "TOSCA-Metadata/TOSCA.meta": "x"})
		}, ".."},
		"not a zip":   {func() []byte { return []byte("this is not a zip file at all") }, "ZIP"},
		"broken yaml": {func() []byte { return zipOf(t, map[string]string{"vnfd.yaml": "tosca_definitions_version: [\n"}) }, "vnfd.yaml"},
		"zip bomb": {func() []byte {
			return zipOf(t, map[string]string{"big.bin": strings.Repeat("0", 300<<20), "vnfd.yaml": "x: 1\n"})
		}, "more than"},
		"bad hash": {func() []byte { return corruptOneListedFile(t, good) }, "hash"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id := c.object("vnf", "package", "create", "-f", "json")["ID"].(string)
			path := filepath.Join(c.dir, strings.ReplaceAll(name, " ", "_")+".zip")
			if err := os.WriteFile(path, tc.build(), 0o600); err != nil {
				t.Fatal(err)
			}
			c.ok("vnf", "package", "upload", "--path", path, id)
			deadline := time.Now().Add(30 * time.Second)
			for {
				p := c.object("vnf", "package", "show", id, "-f", "json")
				if p["Onboarding State"] == "ONBOARDED" {
					t.Fatalf("hostile package onboarded: %v", p)
				}
				raw := showRaw(t, srv.base, id)
				if p["Onboarding State"] == "CREATED" && strings.Contains(raw, "onboardingFailureDetails") {
					if !strings.Contains(raw, tc.want) {
						t.Fatalf("failure does not mention %q: %s", tc.want, raw)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("package %s never failed: %v", id, p)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
	conn, err := pgx.Connect(context.Background(), srv.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var contents, onboarded int
	_ = conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM vnf_package_contents), (SELECT count(*) FROM vnf_packages WHERE vnfd_id IS NOT NULL)`).Scan(&contents, &onboarded)
	if contents != 0 || onboarded != 0 {
		t.Fatalf("hostile packages left %d content rows and %d onboarded packages", contents, onboarded)
	}
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for n, c := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// corruptOneListedFile changes a file whose hash TOSCA.meta lists.
func corruptOneListedFile(t *testing.T, csar []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(csar), int64(len(csar)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		var b bytes.Buffer
		_, _ = b.ReadFrom(rc)
		rc.Close()
		files[f.Name] = b.String()
	}
	for n := range files {
		if strings.HasPrefix(n, "Scripts/") {
			files[n] += "\n# tampered\n"
			return zipOf(t, files)
		}
	}
	t.Fatal("no listed file to corrupt")
	return nil
}

func showRaw(t *testing.T, base, id string) string {
	t.Helper()
	res, err := httpGet(base + "/vnfpkgm/v1/vnf_packages/" + id)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func httpGet(url string) (string, error) {
	res, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}
