package packages

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// parseSample reads the test's stand-in CSARs (sampleZip): the VNFD is
// "<vnfdId> <version>" in vnfd.txt.
func parseSample(_ context.Context, r io.ReaderAt, n int64) (*Parsed, error) {
	zr, err := zip.NewReader(r, n)
	if err != nil {
		return nil, err
	}
	b, err := readZipFile(zr, "vnfd.txt")
	if err != nil {
		return nil, err
	}
	id, ver, _ := strings.Cut(string(b), " ")
	return &Parsed{Vnfd: &model.Vnfd{ID: id, Provider: "p", ProductName: "sample", SoftwareVersion: ver, Version: ver}}, nil
}

// sampleZip is a stand-in CSAR: vnfd.txt and a TOSCA.meta naming its hash,
// stored or deflated.
func sampleZip(t *testing.T, vnfd string, method uint16) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := sha256.Sum256([]byte(vnfd))
	for _, f := range [][2]string{{toscaMeta, "Entry-Definitions: vnfd.txt\n\nName: vnfd.txt\nHash: " + hex.EncodeToString(h[:]) + "\n"}, {"vnfd.txt", vnfd}} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f[0], Method: method})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(f[1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// make run's samples: onboarded when missing, kept when current, replaced
// when an older version is unused, kept (and reported) when instances use
// it, and a user's package with the same vnfdId is never touched.
func TestOnboardSampleKeepsTheCurrentVersion(t *testing.T) {
	s, st := newService(t, t.TempDir(), parseSample)
	ctx := context.Background()
	onboard := func(name, vnfd, content string, want SampleResult) string {
		t.Helper()
		res, detail, err := s.OnboardSample(ctx, name, vnfd, []byte(content))
		if err != nil || res != want {
			t.Fatalf("%s %q: %q (%s, %v), want %q", name, content, res, detail, err, want)
		}
		s.Wait()
		p, err := st.PackageByVnfdID(ctx, vnfd)
		if err != nil {
			t.Fatal(err)
		}
		full, err := st.GetPackage(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		return full.ID + " " + full.OperationalState + " " + full.Checksum["hash"].(string) + " " + full.UserDefinedData["sample"].(string)
	}
	sum := func(c string) string { h := sha256.Sum256([]byte(c)); return hex.EncodeToString(h[:]) }
	v1, v2, v3 := sampleZip(t, "vnfd-a 1", zip.Deflate), sampleZip(t, "vnfd-a 2", zip.Deflate), sampleZip(t, "vnfd-a 3", zip.Deflate)

	first := onboard("a", "vnfd-a", v1, SampleOnboarded)
	if !strings.HasSuffix(first, " ENABLED "+sum(v1)+" a") {
		t.Fatalf("onboarded: %s", first)
	}
	if again := onboard("a", "vnfd-a", v1, SampleCurrent); again != first {
		t.Fatalf("the current sample changed: %s → %s", first, again)
	}
	// The same files zipped another way (make samples): current too.
	if again := onboard("a", "vnfd-a", sampleZip(t, "vnfd-a 1", zip.Store), SampleCurrent); again != first {
		t.Fatalf("the current sample, zipped another way, changed: %s → %s", first, again)
	}
	// Changed files, nothing uses the old package: replaced.
	second := onboard("a", "vnfd-a", v2, SampleReplaced)
	if strings.Fields(second)[0] == strings.Fields(first)[0] || !strings.HasSuffix(second, " ENABLED "+sum(v2)+" a") {
		t.Fatalf("replaced: %s (was %s)", second, first)
	}
	if _, err := st.GetPackage(ctx, strings.Fields(first)[0]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the older package is still there: %v", err)
	}
	// An instance uses it: it stays as it was, and the answer names the instance.
	pkgID := strings.Fields(second)[0]
	in, err := st.CreateInstance(ctx, &model.VnfInstance{ID: uuid.NewString(), VnfdID: "vnfd-a", VnfPkgID: pkgID,
		VnfProvider: "p", VnfProductName: "sample", VnfSoftwareVersion: "2", VnfdVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	res, detail, err := s.OnboardSample(ctx, "a", "vnfd-a", []byte(v3))
	if err != nil || res != SampleInUse || !strings.Contains(detail, in.ID) {
		t.Fatalf("in use: %q %q %v", res, detail, err)
	}
	if kept := onboard("a", "vnfd-a", v2, SampleCurrent); kept != second {
		t.Fatalf("the package in use changed: %s → %s", second, kept)
	}
	// A disabled sample in use stays disabled.
	if _, err := st.UpdatePackage(ctx, pkgID, store.PackageUpdate{OperationalState: model.Disabled}); err != nil {
		t.Fatal(err)
	}
	if res, _, err := s.OnboardSample(ctx, "a", "vnfd-a", []byte(v3)); err != nil || res != SampleInUse {
		t.Fatalf("disabled, in use: %q %v", res, err)
	}
	if p, _ := st.GetPackage(ctx, pkgID); p.OperationalState != model.Disabled {
		t.Fatalf("the disabled package is %s", p.OperationalState)
	}

	// A package of the user's with the sample's vnfdId: left alone.
	mine, err := s.Create(ctx, map[string]any{"owner": "me"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, mine.ID, []byte(sampleZip(t, "vnfd-b 1", zip.Deflate))); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	res, detail, err = s.OnboardSample(ctx, "b", "vnfd-b", []byte(sampleZip(t, "vnfd-b 2", zip.Deflate)))
	if err != nil || res != SampleForeign || !strings.Contains(detail, mine.ID) {
		t.Fatalf("foreign: %q %q %v", res, detail, err)
	}
	if p, err := st.GetPackage(ctx, mine.ID); err != nil || p.OperationalState != model.Enabled || p.Checksum["hash"] != sum(sampleZip(t, "vnfd-b 1", zip.Deflate)) {
		t.Fatalf("the user's package: %+v %v", p, err)
	}
}
