// Package api serves the SOL003 VNF LCM API (/vnflcm/v1) over HTTP: routing,
// request validation against the served OpenAPI, SOL013 filters, attribute
// selectors and paging, ProblemDetails errors and masking of secrets. It knows
// HTTP; the lcm package owns the behaviour.
package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/metrics"
	"github.com/mini-vnfm/mini-vnfm/internal/notify"
	"github.com/mini-vnfm/mini-vnfm/internal/packages"
	"github.com/mini-vnfm/mini-vnfm/internal/sol013"
	"github.com/mini-vnfm/mini-vnfm/internal/vims"
	"github.com/mini-vnfm/mini-vnfm/openapi"
)

// APIVersion is the SOL003 VNF LCM API version served under /vnflcm/v1.
const APIVersion = "1.3.0"

// Config wires the HTTP API.
type Config struct {
	Service *lcm.Service
	// Vims serves /v1.0/vims (nil: the Service's registry).
	Vims *vims.Registry
	// EndpointURL is the externally visible base URL used in Location and _links.
	EndpointURL string
	Logger      *slog.Logger
	Metrics     *metrics.Metrics
	// PageSize bounds list responses (default 100); more pages follow via Link.
	PageSize int
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// Wake, if set, is called after an operation is enqueued (in-process engine).
	Wake func()
	// Packages serves /vnfpkgm/v1 (nil: not served).
	Packages *packages.Service
	// Subscriptions serves /vnflcm/v1/subscriptions (nil: not served).
	Subscriptions *notify.Subscriptions
	// Auth authenticates and authorizes requests (nil: authentication off).
	Auth *auth.Authenticator
	// BodyTimeout bounds reading a request body (default 60 s); a package
	// upload may instead take UploadTimeout (default 30 min) as long as it
	// never goes BodyTimeout without sending a byte.
	BodyTimeout, UploadTimeout time.Duration
	// Uploads and UploadsPerClient bound the package uploads in progress,
	// in all and per client address (defaults 4 and 2); beyond them 429.
	Uploads, UploadsPerClient int
	// AllowedOrigins are browser origins (scheme://host[:port]) besides
	// EndpointURL's own that may call the API (VNFM_ALLOWED_ORIGINS).
	AllowedOrigins []string
}

// API is the HTTP handler set.
type API struct {
	cfg                                             Config
	svc                                             *lcm.Service
	vims                                            *vims.Registry
	log                                             *slog.Logger
	base                                            string
	validator                                       *openapi.RequestValidator
	uploads                                         *uploadLimiter
	instFields, opFields, opSelectFields, subFields *sol013.Field
	// instHref is the JSON string of base+"/vnflcm/v1/vnf_instances/"
	// without its closing quote (withLinks).
	instHref []byte
}

// New builds the handler tree.
func New(ctx context.Context, cfg Config) (http.Handler, error) {
	a, err := newAPI(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return a.routes(), nil
}

func newAPI(ctx context.Context, cfg Config) (*API, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 60 * time.Second
	}
	if cfg.UploadTimeout < cfg.BodyTimeout {
		cfg.UploadTimeout = max(30*time.Minute, cfg.BodyTimeout)
	}
	if cfg.Uploads <= 0 {
		cfg.Uploads = 4
	}
	if cfg.UploadsPerClient <= 0 {
		cfg.UploadsPerClient = 2
	}
	doc, err := openapi.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("api: openapi: %w", err)
	}
	v, err := openapi.NewRequestValidator(doc)
	if err != nil {
		return nil, fmt.Errorf("api: validator: %w", err)
	}
	if cfg.Vims == nil && cfg.Service != nil {
		cfg.Vims = cfg.Service.Vims()
	}
	a := &API{cfg: cfg, svc: cfg.Service, vims: cfg.Vims, log: cfg.Logger.With("component", "api"),
		base: strings.TrimRight(cfg.EndpointURL, "/"), validator: v, uploads: newUploadLimiter(cfg.Uploads, cfg.UploadsPerClient)}
	href, _ := json.Marshal(a.base + "/vnflcm/v1/vnf_instances/") // a string always encodes
	a.instHref = href[:len(href)-1]
	if a.instFields, err = schemaFields(doc, "VnfInstance", "_links"); err != nil {
		return nil, err
	}
	// progress is derived from the journal: selectable, not filterable.
	if a.opFields, err = schemaFields(doc, "VnfLcmOpOcc", "_links", "progress"); err != nil {
		return nil, err
	}
	if a.opSelectFields, err = schemaFields(doc, "VnfLcmOpOcc", "_links"); err != nil {
		return nil, err
	}
	if a.subFields, err = schemaFields(doc, "LccnSubscription", "_links"); err != nil {
		return nil, err
	}
	return a, nil
}

// schemaFields builds the filter/selector attribute tree of a component schema.
func schemaFields(doc *openapi3.T, name string, drop ...string) (*sol013.Field, error) {
	ref, ok := doc.Components.Schemas[name]
	if !ok || ref.Value == nil {
		return nil, fmt.Errorf("api: schema %s missing from openapi/vnflcm.yaml", name)
	}
	f := sol013.FieldsFromOpenAPI(ref.Value)
	for _, d := range drop {
		delete(f.Props, d)
	}
	return f, nil
}

func (a *API) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(a.outerChain()...)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		a.writeProblem(w, r, problemf(http.StatusNotFound, fmt.Sprintf("no resource at %s; the VNF LCM API lives under /vnflcm/v1 (spec: /vnflcm/v1/openapi.yaml)", r.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		a.writeProblem(w, r, problemf(http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path))
	})

	h := newRouteTable(a)
	h.handle(r, "/healthz", methods{http.MethodGet: a.healthz})
	h.handle(r, "/readyz", methods{http.MethodGet: a.readyz})
	if a.cfg.Metrics != nil {
		mh := promhttp.HandlerFor(a.cfg.Metrics.Registry, promhttp.HandlerOpts{})
		h.handle(r, "/metrics", methods{http.MethodGet: mh.ServeHTTP})
	}
	a.authRoutes(r, h)

	a.vnfpkgmRoutes(r, h)
	a.vimRoutes(r, h)
	r.Group(func(r chi.Router) {
		r.Use(a.lcmChain()...)
		h.handle(r, "/vnflcm/api_versions", methods{http.MethodGet: a.apiVersions("/vnflcm")})
		v1 := "/vnflcm/v1"
		h.handle(r, v1+"/api_versions", methods{http.MethodGet: a.apiVersions(v1)})
		h.handle(r, v1+"/openapi.yaml", methods{http.MethodGet: a.openapiSpec})
		h.handle(r, v1+"/vnf_instances", methods{http.MethodGet: a.listInstances, http.MethodPost: a.createInstance})
		h.handle(r, v1+"/vnf_instances/{id}", methods{http.MethodGet: a.getInstance, http.MethodPatch: a.modifyInstance, http.MethodDelete: a.deleteInstance})
		for task, f := range map[string]taskFunc{
			"instantiate": a.svc.Instantiate, "terminate": a.svc.Terminate, "scale": a.svc.Scale,
			"heal": a.svc.Heal, "change_ext_conn": a.svc.ChangeExtConn,
		} {
			h.handle(r, v1+"/vnf_instances/{id}/"+task, methods{http.MethodPost: a.task(f)})
		}
		for task, alt := range map[string]string{
			"scale_to_level": "use POST .../scale with SCALE_OUT/SCALE_IN steps",
			"change_flavour": "terminate and instantiate the instance with the other flavourId",
			"operate":        "it is not supported for Kubernetes cluster VNFs",
		} {
			h.handle(r, v1+"/vnf_instances/{id}/"+task, methods{http.MethodPost: a.unsupported(task, alt)})
		}
		h.handle(r, v1+"/vnf_lcm_op_occs", methods{http.MethodGet: a.listOpOccs})
		h.handle(r, v1+"/vnf_lcm_op_occs/{id}", methods{http.MethodGet: a.getOpOcc})
		h.handle(r, v1+"/vnf_lcm_op_occs/{id}/retry", methods{http.MethodPost: a.retry})
		h.handle(r, v1+"/vnf_lcm_op_occs/{id}/rollback", methods{http.MethodPost: a.rollback})
		h.handle(r, v1+"/vnf_lcm_op_occs/{id}/fail", methods{http.MethodPost: a.fail})
		h.handle(r, v1+"/vnf_lcm_op_occs/{id}/cancel", methods{http.MethodPost: a.cancel})
		if a.cfg.Subscriptions != nil {
			h.handle(r, v1+"/subscriptions", methods{http.MethodGet: a.listSubscriptions, http.MethodPost: a.createSubscription})
			h.handle(r, v1+"/subscriptions/{id}", methods{http.MethodGet: a.getSubscription, http.MethodDelete: a.deleteSubscription})
		}
	})
	return r
}

// outerChain is the middleware every request passes through.
func (a *API) outerChain() []func(http.Handler) http.Handler {
	return []func(http.Handler) http.Handler{a.recoverer, a.cleanPath, a.requestID, a.observe, a.bodyDeadline,
		a.hostCheck, a.originCheck, a.strictQuery, a.authenticate}
}

// lcmChain is the middleware of /vnflcm after outerChain.
func (a *API) lcmChain() []func(http.Handler) http.Handler {
	return []func(http.Handler) http.Handler{a.version, a.readJSON, a.validate}
}

type methods map[string]http.HandlerFunc

// routeTable registers every method of a path on one chi route so that
// other methods get a ProblemDetails 405 with an accurate Allow header.
type routeTable struct{ a *API }

func newRouteTable(a *API) *routeTable { return &routeTable{a: a} }

func (t *routeTable) handle(r chi.Router, pattern string, ms methods) {
	allowed := make([]string, 0, len(ms))
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if _, ok := ms[m]; ok {
			allowed = append(allowed, m)
		}
	}
	allow := strings.Join(allowed, ", ")
	r.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
		if f, ok := ms[req.Method]; ok {
			f(w, req)
			return
		}
		if req.Method == http.MethodHead {
			if f, ok := ms[http.MethodGet]; ok {
				f(w, req)
				return
			}
		}
		w.Header().Set("Allow", allow)
		t.a.writeProblem(w, req, problemf(http.StatusMethodNotAllowed,
			fmt.Sprintf("%s is not allowed on %s; allowed: %s", req.Method, req.URL.Path, allow)))
	})
}
