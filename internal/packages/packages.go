// Package packages manages VNF packages (the SOL005 subset the Tacker CLI
// uses): package resources, CSAR upload (direct or from a URI), asynchronous
// onboarding under a lease so an interrupted onboarding is finished by any
// process, and reads of the stored content, VNFD and artifacts.
package packages

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/reqerr"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Parsed is what onboarding needs from a CSAR.
type Parsed struct {
	Vnfd                *model.Vnfd
	SoftwareImages      []map[string]any
	AdditionalArtifacts []map[string]any
	// VnfdFiles are the CSAR paths that make up the VNFD.
	VnfdFiles []string
}

// ParseFunc validates and reads a CSAR of size bytes; an error's text is
// shown to users.
type ParseFunc func(ctx context.Context, content io.ReaderAt, size int64) (*Parsed, error)

// Config wires the service.
type Config struct {
	Store  *store.Store
	Box    *secrets.Box
	Parse  ParseFunc
	Logger *slog.Logger
	// MaxBytes bounds an uploaded or fetched CSAR (default 256 MiB).
	MaxBytes int64
	// SpoolDir holds CSARs on disk while they are stored and parsed
	// (default os.TempDir()); the files are anonymous.
	SpoolDir string
	// FetchTimeout bounds upload_from_uri downloads (default 5m).
	FetchTimeout time.Duration
	// MaxFetches bounds the upload_from_uri downloads in progress in this
	// process (default 4); more wait for a slot.
	MaxFetches int
	// Lease of an onboarding (default 2m); Sweep resumes expired ones.
	Lease time.Duration
	// Outbound is the policy upload_from_uri downloads go through (nil: the
	// zero policy, which refuses loopback and private addresses).
	Outbound *outbound.Policy
}

// Service implements package management.
type Service struct {
	cfg     Config
	client  *http.Client
	fetches chan struct{} // a slot per download in progress
	st      *store.Store
	log     *slog.Logger
	owner   string
	wg      sync.WaitGroup
}

// New builds a Service.
func New(c Config) *Service {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 256 << 20
	}
	if c.SpoolDir == "" {
		c.SpoolDir = os.TempDir()
	}
	if c.MaxFetches <= 0 {
		c.MaxFetches = 4
	}
	if c.FetchTimeout <= 0 {
		c.FetchTimeout = 5 * time.Minute
	}
	if c.Lease <= 0 {
		c.Lease = 2 * time.Minute
	}
	if c.Outbound == nil {
		c.Outbound = &outbound.Policy{}
	}
	h, _ := os.Hostname()
	// A probe client: the failure of a download, shown in the package's
	// onboardingFailureDetails, must not tell closed ports from filtered ones.
	return &Service{cfg: c, st: c.Store, log: c.Logger.With("component", "packages"),
		owner:   fmt.Sprintf("%s-%d-%s", h, os.Getpid(), uuid.NewString()[:8]),
		fetches: make(chan struct{}, c.MaxFetches),
		client:  c.Outbound.Client(outbound.ClientOptions{Timeout: c.FetchTimeout, Probe: true})}
}

// MaxBytes is the upload limit.
func (s *Service) MaxBytes() int64 { return s.cfg.MaxBytes }

func notFound(id string) error {
	return &reqerr.Error{Kind: reqerr.NotFound, Detail: fmt.Sprintf("VNF package %s does not exist; list packages with GET /vnfpkgm/v1/vnf_packages", id)}
}

func validID(id string) bool { _, err := uuid.Parse(id); return err == nil && len(id) == 36 }

func mapErr(err error, id string) error {
	var ce *store.ConflictError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return notFound(id)
	case errors.As(err, &ce):
		return &reqerr.Error{Kind: reqerr.Conflict, Detail: ce.Reason, Err: err}
	}
	return err
}

// Create creates a package resource (CREATED, DISABLED, NOT_IN_USE).
func (s *Service) Create(ctx context.Context, userDefinedData map[string]any) (*store.VnfPackage, error) {
	return s.st.CreatePackage(ctx, uuid.NewString(), userDefinedData)
}

// Get reads a package.
func (s *Service) Get(ctx context.Context, id string) (*store.VnfPackage, error) {
	if !validID(id) {
		return nil, notFound(id)
	}
	p, err := s.st.GetPackage(ctx, id)
	return p, mapErr(err, id)
}

// List pages through packages.
func (s *Service) List(ctx context.Context, p store.Page) ([]*store.VnfPackage, bool, error) {
	return s.st.ListPackages(ctx, p)
}

// Update applies a VnfPkgInfoModifications request.
func (s *Service) Update(ctx context.Context, id string, u store.PackageUpdate) (*store.VnfPackage, error) {
	if !validID(id) {
		return nil, notFound(id)
	}
	if u.OperationalState != "" && u.OperationalState != model.Enabled && u.OperationalState != model.Disabled {
		return nil, &reqerr.Error{Kind: reqerr.Invalid, Detail: `"operationalState" must be ENABLED or DISABLED`}
	}
	if u.OperationalState == "" && u.UserDefinedData == nil {
		return nil, &reqerr.Error{Kind: reqerr.Invalid, Detail: `give "operationalState" and/or "userDefinedData"`}
	}
	p, err := s.st.UpdatePackage(ctx, id, u)
	return p, mapErr(err, id)
}

// Delete deletes a DISABLED, unused package.
func (s *Service) Delete(ctx context.Context, id string) error {
	if !validID(id) {
		return notFound(id)
	}
	return mapErr(s.st.DeletePackage(ctx, id), id)
}

// Upload stores a CSAR held in memory (the embedded cloud's samples) and
// starts onboarding it in the background.
func (s *Service) Upload(ctx context.Context, id string, content []byte) error {
	return s.UploadFrom(ctx, id, bytes.NewReader(content))
}

// UploadFrom streams a CSAR from body to a spool file and into the
// database, then onboards it in the background. The package must be
// CREATED (checked before the body is read). Errors of body are wrapped,
// so a caller can tell http.MaxBytesError or a deadline apart.
func (s *Service) UploadFrom(ctx context.Context, id string, body io.Reader) error {
	if !validID(id) {
		return notFound(id)
	}
	if err := s.st.CheckUploadable(ctx, id); err != nil {
		return mapErr(err, id)
	}
	sp, err := newSpool(s.cfg.SpoolDir, body, s.cfg.MaxBytes)
	if err != nil {
		return err
	}
	if sp.size == 0 {
		sp.Close()
		return &reqerr.Error{Kind: reqerr.Invalid, Detail: "the request body is empty; send the CSAR (a ZIP file) with Content-Type: application/zip"}
	}
	content := &store.Content{R: sp.reader(), Size: sp.size, SHA256: sp.sum}
	if _, err := s.st.StartOnboarding(ctx, id, s.owner, s.cfg.Lease, content, nil); err != nil {
		sp.Close()
		return mapErr(err, id)
	}
	s.background(id, sp)
	return nil
}

// source is a stored upload_from_uri request.
type source struct {
	AddressInformation string `json:"addressInformation"`
	UserName           string `json:"userName,omitempty"`
	Password           string `json:"password,omitempty"`
	// AuthType and OAuth2 are read only to refuse what is not supported.
	AuthType string          `json:"authType,omitempty"`
	OAuth2   json.RawMessage `json:"paramsOauth2ClientCredentials,omitempty"`
}

// UploadFromURI records where to fetch the CSAR and fetches it in the background.
func (s *Service) UploadFromURI(ctx context.Context, id string, raw []byte) error {
	if !validID(id) {
		return notFound(id)
	}
	var src source
	if err := json.Unmarshal(raw, &src); err != nil || src.AddressInformation == "" {
		return &reqerr.Error{Kind: reqerr.Invalid, Detail: `request body must be {"addressInformation": "<http(s) URL of the CSAR>", "userName"?, "password"?}`}
	}
	u, err := url.Parse(src.AddressInformation)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &reqerr.Error{Kind: reqerr.Invalid, Detail: fmt.Sprintf("addressInformation %q is not an http(s) URL", src.AddressInformation)}
	}
	switch {
	case src.AuthType == "OAUTH2_CLIENT_CREDENTIALS" || len(src.OAuth2) > 0:
		return &reqerr.Error{Kind: reqerr.Unprocessable, Detail: "fetching a package with OAuth 2.0 client credentials is not supported: give authType BASIC with userName and password, or a URL that needs no credentials"}
	case src.AuthType != "" && src.AuthType != "BASIC":
		return &reqerr.Error{Kind: reqerr.Invalid, Detail: fmt.Sprintf("authType %q is not BASIC or OAUTH2_CLIENT_CREDENTIALS", src.AuthType)}
	}
	if err := s.cfg.Outbound.CheckURL(ctx, src.AddressInformation); err != nil {
		return &reqerr.Error{Kind: reqerr.Unprocessable, Detail: "addressInformation: " + err.Error()}
	}
	sealed, err := s.cfg.Box.SealJSON(raw, store.PackageSourcePlace(id))
	if err != nil {
		return err
	}
	if _, err := s.st.StartOnboarding(ctx, id, s.owner, s.cfg.Lease, nil, sealed); err != nil {
		return mapErr(err, id)
	}
	s.background(id, nil)
	return nil
}

// background onboards one package outside the request; it owns sp.
func (s *Service) background(id string, sp *spool) {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.FetchTimeout+s.cfg.Lease)
		defer cancel()
		s.onboard(ctx, id, s.owner, sp)
	})
}

// Wait blocks until background onboardings have finished (shutdown, tests).
func (s *Service) Wait() { s.wg.Wait() }

// Run resumes onboardings whose process died, until ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Lease / 4)
	defer t.Stop()
	for {
		s.Sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep claims and finishes every onboarding with an expired lease.
func (s *Service) Sweep(ctx context.Context) {
	for ctx.Err() == nil {
		owner := s.owner + "/" + uuid.NewString()[:8]
		p, err := s.st.ClaimStaleOnboarding(ctx, owner, s.cfg.Lease)
		if err != nil || p == nil {
			if err != nil && ctx.Err() == nil {
				s.log.Error("claiming stale onboardings", "err", err)
			}
			return
		}
		s.log.Info("resuming an interrupted onboarding", "vnfPkgId", p.ID, "state", p.OnboardingState)
		var sp *spool
		if p.OnboardingState == store.PkgProcessing {
			sp, err = s.stored(ctx, p.ID)
			if err != nil {
				s.finishFailed(ctx, p.ID, owner, fmt.Errorf("the uploaded content was lost (%v); upload the CSAR again", err))
				continue
			}
		}
		s.onboard(ctx, p.ID, owner, sp)
	}
}

// onboard fetches (sp nil: upload_from_uri), parses and records the
// package; it closes sp.
func (s *Service) onboard(ctx context.Context, id, owner string, sp *spool) {
	log := s.log.With("vnfPkgId", id)
	defer func() { sp.Close() }()
	if sp == nil {
		p, err := s.st.GetPackage(ctx, id)
		if err != nil {
			log.Error("onboarding: cannot read package", "err", err)
			return
		}
		sp, err = s.fetch(ctx, id, p.Source)
		if err != nil {
			s.finishFailed(ctx, id, owner, err)
			return
		}
		if err := s.st.FetchedContent(ctx, id, owner, &store.Content{R: sp.reader(), Size: sp.size, SHA256: sp.sum}); err != nil {
			log.Error("onboarding: cannot store fetched content", "err", err)
			return
		}
	}
	start := time.Now()
	parsed, err := s.cfg.Parse(ctx, sp, sp.size)
	if err != nil {
		s.finishFailed(ctx, id, owner, err)
		return
	}
	ok := &store.Onboarded{Vnfd: parsed.Vnfd, SoftwareImages: parsed.SoftwareImages, AdditionalArtifacts: parsed.AdditionalArtifacts,
		VnfdFiles: parsed.VnfdFiles, Checksum: map[string]any{"algorithm": "SHA-256", "hash": sp.sum}}
	if err := s.st.FinishOnboarding(ctx, id, owner, ok, nil); err != nil {
		if errors.Is(err, store.ErrDuplicateVnfd) {
			s.finishFailed(ctx, id, owner, err)
			return
		}
		log.Error("onboarding: cannot record result", "err", err)
		return
	}
	log.Info("package onboarded", "vnfdId", parsed.Vnfd.ID, "took", time.Since(start).Round(time.Millisecond))
}

func (s *Service) finishFailed(ctx context.Context, id, owner string, cause error) {
	pd := &model.ProblemDetails{Status: http.StatusBadRequest, Title: "Onboarding failed",
		Detail: "onboarding failed: " + cause.Error() + "; fix the package and upload it again to this package"}
	if err := s.st.FinishOnboarding(ctx, id, owner, nil, pd); err != nil {
		s.log.Error("onboarding: cannot record failure", "vnfPkgId", id, "err", err, "failure", pd.Detail)
		return
	}
	s.log.Warn("onboarding failed", "vnfPkgId", id, "detail", pd.Detail)
}

// fetch downloads the CSAR of an upload_from_uri request to a spool,
// bounded in size and time.
func (s *Service) fetch(ctx context.Context, id string, sealed []byte) (*spool, error) {
	raw, err := s.cfg.Box.OpenJSON(sealed, store.PackageSourcePlace(id))
	if err != nil {
		return nil, err
	}
	var src source
	if err := json.Unmarshal(raw, &src); err != nil {
		return nil, err
	}
	select {
	case s.fetches <- struct{}{}:
		defer func() { <-s.fetches }()
	case <-ctx.Done():
		return nil, fmt.Errorf("downloading %s: no download slot became free in time (VNFM_UPLOADS)", src.AddressInformation)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.AddressInformation, nil)
	if err != nil {
		return nil, fmt.Errorf("addressInformation: %w", err)
	}
	if src.UserName != "" || src.Password != "" {
		req.SetBasicAuth(src.UserName, src.Password)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot download %s: %s", src.AddressInformation, secrets.Scrub(outbound.Describe(err), []string{src.Password}))
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("downloading %s answered %s", src.AddressInformation, outbound.Status(res.StatusCode))
	}
	sp, err := newSpool(s.cfg.SpoolDir, res.Body, s.cfg.MaxBytes)
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("the CSAR at %s is larger than %d bytes", src.AddressInformation, s.cfg.MaxBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %s", src.AddressInformation, outbound.Describe(err))
	}
	return sp, nil
}

// stored spools a package's stored content.
func (s *Service) stored(ctx context.Context, id string) (*spool, error) {
	pr, pw := io.Pipe()
	go func() {
		_, err := s.st.WritePackageContent(ctx, id, pw)
		pw.CloseWithError(err)
	}()
	sp, err := newSpool(s.cfg.SpoolDir, pr, 1<<62)
	pr.Close()
	return sp, mapErr(err, id)
}

// Content returns the CSAR of an onboarded package, spooled: read it with
// ReadAt or as an io.ReadSeeker, then Close it.
func (s *Service) Content(ctx context.Context, id string) (*Spooled, error) {
	p, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.OnboardingState != model.Onboarded {
		return nil, &reqerr.Error{Kind: reqerr.Conflict, Detail: fmt.Sprintf("VNF package %s is %s; its content is available once ONBOARDED", id, p.OnboardingState)}
	}
	sp, err := s.stored(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Spooled{ReadSeeker: io.NewSectionReader(sp.f, 0, sp.size), sp: sp}, nil
}

// Spooled is stored package content on disk.
type Spooled struct {
	io.ReadSeeker
	sp *spool
}

// Size is the content's length.
func (c *Spooled) Size() int64 { return c.sp.size }

// ReadAt reads at an offset.
func (c *Spooled) ReadAt(p []byte, off int64) (int, error) { return c.sp.ReadAt(p, off) }

// Close frees the spool.
func (c *Spooled) Close() error { return c.sp.Close() }

func (s *Service) archive(ctx context.Context, id string) (*store.VnfPackage, *zip.Reader, io.Closer, error) {
	c, err := s.Content(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := s.st.GetPackage(ctx, id)
	if err != nil {
		c.Close()
		return nil, nil, nil, mapErr(err, id)
	}
	zr, err := zip.NewReader(c, c.Size())
	if err != nil {
		c.Close()
		return nil, nil, nil, fmt.Errorf("stored CSAR of package %s: %w", id, err)
	}
	return p, zr, c, nil
}

// VNFD returns the VNFD: one YAML file as text when it is a single file and
// text is acceptable, else a ZIP of the VNFD files.
func (s *Service) VNFD(ctx context.Context, id string, wantText, wantZip bool) (data []byte, contentType string, err error) {
	p, zr, c, err := s.archive(ctx, id)
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	files := p.VnfdFiles
	if wantText && (len(files) == 1 || !wantZip) {
		if len(files) != 1 {
			return nil, "", &reqerr.Error{Kind: reqerr.NotAcceptable, Detail: fmt.Sprintf("the VNFD of package %s consists of %d files; ask for application/zip", id, len(files))}
		}
		b, err := readZipFile(zr, files[0])
		return b, "text/plain", err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		b, err := readZipFile(zr, f)
		if err != nil {
			return nil, "", err
		}
		w, err := zw.Create(f)
		if err != nil {
			return nil, "", err
		}
		if _, err := w.Write(b); err != nil {
			return nil, "", err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), "application/zip", nil
}

// Artifact returns one file of the CSAR.
func (s *Service) Artifact(ctx context.Context, id, name string) ([]byte, error) {
	_, zr, c, err := s.archive(ctx, id)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	clean := path.Clean("/" + name)[1:]
	if clean == "" || strings.HasSuffix(name, "/") {
		return nil, &reqerr.Error{Kind: reqerr.NotFound, Detail: "give the artifact path inside the package, e.g. Scripts/install.sh"}
	}
	b, err := readZipFile(zr, clean)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &reqerr.Error{Kind: reqerr.NotFound, Detail: fmt.Sprintf("VNF package %s has no artifact %q", id, clean)}
	}
	return b, err
}

func readZipFile(zr *zip.Reader, name string) ([]byte, error) {
	for _, f := range zr.File {
		if f.Name == name {
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			defer rc.Close()
			return io.ReadAll(io.LimitReader(rc, 1<<30))
		}
	}
	return nil, os.ErrNotExist
}

// SampleResult is what OnboardSample found and did.
type SampleResult string

const (
	// SampleCurrent: the package onboarded for the sample holds this content.
	SampleCurrent SampleResult = "current"
	// SampleOnboarded: no package carried its vnfdId; this one is onboarding.
	SampleOnboarded SampleResult = "onboarded"
	// SampleReplaced: the package onboarded from an older version of the
	// sample was used by no VNF instance; it was deleted and this content is
	// onboarding in its place.
	SampleReplaced SampleResult = "replaced"
	// SampleInUse: the package onboarded from an older version of the sample
	// is used by VNF instances, so it stays (states as they were).
	SampleInUse SampleResult = "in use"
	// SampleForeign: a package that was not onboarded as this sample carries
	// its vnfdId; it is left alone and the sample is not onboarded.
	SampleForeign SampleResult = "not the sample"
)

// OnboardSample keeps the package of the sample name (userDefinedData
// {"sample": name}) onboarded with content, whose VNFD is vnfdID: make run
// onboards its samples on every start, and a data directory kept from an
// older checkout must not keep serving that checkout's samples. A package
// is the sample's when its userDefinedData says so; it holds this content
// when its checksum is content's SHA-256 or its TOSCA.meta is content's (the
// meta lists every file's SHA-256: the same files zipped another way, as
// `make samples` does). For SampleInUse the error is nil
// and detail names the instances that keep the old package.
func (s *Service) OnboardSample(ctx context.Context, name, vnfdID string, content []byte) (res SampleResult, detail string, err error) {
	old, err := s.st.PackageByVnfdID(ctx, vnfdID)
	if errors.Is(err, store.ErrNotFound) {
		return SampleOnboarded, "", s.onboardContent(ctx, name, content)
	}
	if err != nil {
		return "", "", err
	}
	p, err := s.st.GetPackage(ctx, old.ID)
	if err != nil {
		return "", "", err
	}
	if p.UserDefinedData["sample"] != name {
		return SampleForeign, fmt.Sprintf("VNF package %s carries vnfdId %s and was not onboarded as sample %s", p.ID, vnfdID, name), nil
	}
	if same, err := s.sameSample(ctx, p, content); err != nil || same {
		return SampleCurrent, "", err
	}
	wasEnabled := p.OperationalState == model.Enabled
	if wasEnabled {
		if _, err := s.st.UpdatePackage(ctx, p.ID, store.PackageUpdate{OperationalState: model.Disabled}); err != nil {
			return "", "", err
		}
	}
	if err := s.st.DeletePackage(ctx, p.ID); err != nil {
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.State != model.InUse {
			return "", "", err
		}
		if wasEnabled {
			if _, err := s.st.UpdatePackage(ctx, p.ID, store.PackageUpdate{OperationalState: model.Enabled}); err != nil {
				return "", "", err
			}
		}
		return SampleInUse, ce.Reason, nil
	}
	return SampleReplaced, "", s.onboardContent(ctx, name, content)
}

func (s *Service) onboardContent(ctx context.Context, name string, content []byte) error {
	p, err := s.Create(ctx, map[string]any{"sample": name})
	if err != nil {
		return err
	}
	return s.Upload(ctx, p.ID, content)
}

// sameSample reports whether the stored package p holds the files of the
// CSAR content.
func (s *Service) sameSample(ctx context.Context, p *store.VnfPackage, content []byte) (bool, error) {
	sum := sha256.Sum256(content)
	if p.Checksum["hash"] == hex.EncodeToString(sum[:]) {
		return true, nil
	}
	zr, err := zip.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return false, err
	}
	want, err := readZipFile(zr, toscaMeta)
	if err != nil {
		return false, fmt.Errorf("the sample has no %s: %w", toscaMeta, err)
	}
	_, stored, c, err := s.archive(ctx, p.ID)
	if err != nil {
		return false, err
	}
	defer c.Close()
	have, err := readZipFile(stored, toscaMeta)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil && bytes.Equal(have, want), err
}

const toscaMeta = "TOSCA-Metadata/TOSCA.meta"
