// Package notify delivers LCM notifications from the outbox to subscribers:
// at least once, in order per subscription, with exponential backoff for as
// long as configured, and a stable notification id for de-duplication. It
// also tests callback URIs when subscriptions are created.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/metrics"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Config tunes delivery. Zero values take the defaults.
type Config struct {
	Store   *store.Store
	Box     *secrets.Box
	BaseURL string // external API base URL for _links
	Logger  *slog.Logger
	Metrics *metrics.Metrics
	// Workers deliver to that many subscriptions at once (default 4).
	Workers int
	// Timeout bounds one HTTP attempt (default 10s).
	Timeout time.Duration
	// BackoffMin and BackoffMax bound the exponential retry delay (defaults 1s, 5m).
	BackoffMin, BackoffMax time.Duration
	// RetryFor is how long a notification is retried before it is set aside (default 24h).
	RetryFor time.Duration
	// Poll is the fallback when no wake-up arrives (default 2s).
	Poll time.Duration
	// Outbound is the policy every callback, token endpoint and callback
	// test goes through (nil: the zero policy, which refuses loopback and
	// private addresses).
	Outbound *outbound.Policy
}

// Notifier runs the delivery workers.
type Notifier struct {
	cfg    Config
	client *http.Client // deliveries and token requests
	probe  *http.Client // callback tests: failures all take the same time
	log    *slog.Logger
	wake   chan struct{}
	owner  string
	tokens sync.Map // tokenEndpoint|clientId → cachedToken
	// afterRecord, when set (tests), runs after each round's record.
	afterRecord func()
	// attempts are the NotificationAttempts counters by result, resolved
	// once (nil without metrics).
	attempts map[string]prometheus.Counter
}

// New builds a Notifier.
func New(c Config) *Notifier {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.RetryFor <= 0 {
		c.RetryFor = 24 * time.Hour
	}
	if c.Poll <= 0 {
		c.Poll = 2 * time.Second
	}
	if c.Outbound == nil {
		c.Outbound = &outbound.Policy{}
	}
	h, _ := os.Hostname()
	n := &Notifier{cfg: c, log: c.Logger.With("component", "notify"), wake: make(chan struct{}, c.Workers),
		owner:  fmt.Sprintf("%s-%d", h, os.Getpid()),
		client: c.Outbound.Client(outbound.ClientOptions{Timeout: c.Timeout}),
		probe:  c.Outbound.Client(outbound.ClientOptions{Timeout: c.Timeout, Probe: true})}
	if m := c.Metrics; m != nil {
		n.attempts = map[string]prometheus.Counter{}
		for _, r := range []string{"delivered", "failed", "given_up"} {
			n.attempts[r] = m.NotificationAttempts.WithLabelValues(r)
		}
	}
	return n
}

// Run delivers until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { n.listen(ctx) })
	for i := 0; i < n.cfg.Workers; i++ {
		wg.Go(func() { n.worker(ctx) })
	}
	wg.Go(func() {
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := n.cfg.Store.PruneDelivered(ctx, 7*24*time.Hour); err != nil && ctx.Err() == nil {
					n.log.Warn("pruning delivered notifications", "err", err)
				}
			}
		}
	})
	wg.Wait()
}

// wakeOne wakes one idle worker per wake-up: every finished operation
// notifies, and waking every worker each time made all but one of them claim
// in vain (a subscription is delivered to by one worker at a time).
func (n *Notifier) wakeOne() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *Notifier) wakeAll() {
	for i := 0; i < cap(n.wake); i++ {
		select {
		case n.wake <- struct{}{}:
		default:
			return
		}
	}
}

func (n *Notifier) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := listenOnce(ctx, n.cfg.Store.Pool(), n.wakeAll, n.wakeOne)
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("outbox listener stopped; polling until it reconnects", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, wakeAll, wake func()) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	defer func() { _ = conn.Conn().Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "LISTEN "+store.ChannelOutbox); err != nil {
		return err
	}
	wakeAll() // catch up on what was queued while nobody listened
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}

func (n *Notifier) worker(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		busy := n.deliverOne(ctx)
		if ctx.Err() != nil {
			return
		}
		if busy {
			continue
		}
		t.Reset(n.cfg.Poll)
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		case <-t.C:
		}
	}
}

const (
	batch = 20
	// rounds is how many rounds a notifier delivers to one subscription
	// before it lets the subscription go back to the queue, where the one
	// waiting longest comes first: a busy subscription does not keep a
	// worker from the others.
	rounds = 8
)

// deliverOne leases one subscription and sends its due notifications in
// order, a round of at most batch at a time, each round recorded (and the
// next one claimed, as long as the subscription has more and for at most
// rounds rounds) in one statement. It reports whether to claim again at
// once: yes after it released a subscription, not when it found nothing to
// claim — notifications queued after that claim wake a worker (the wake-up
// waits in n.wake until one takes it).
func (n *Notifier) deliverOne(ctx context.Context) bool {
	owner := n.owner + "/" + uuid.NewString()[:8]
	lease := time.Duration(batch+1)*n.cfg.Timeout + 10*time.Second
	sub, ds, err := n.cfg.Store.ClaimSubscription(ctx, owner, lease, batch)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Error("claiming notifications", "err", err)
		}
		return false
	}
	if sub == nil {
		return false
	}
	auth, err := n.auth(sub)
	if err != nil {
		n.log.Error("subscription authentication unreadable", "subscriptionId", sub.ID, "err", err)
	}
	for round := 1; ; round++ {
		// A round's records are written once, at its end (store.EndDelivery):
		// a crash before that sends this round's notifications again, with
		// the same notification ids — at least once, in order, as always.
		var delivered []int64
		var failure *store.DeliveryFailure
		for _, d := range ds {
			err := n.send(ctx, sub, auth, d)
			if err == nil {
				delivered = append(delivered, d.ID)
				n.observe("delivered", time.Since(d.CreatedAt))
				continue
			}
			giveUp := time.Since(d.CreatedAt) > n.cfg.RetryFor
			next := backoff(d.Attempts, n.cfg.BackoffMin, n.cfg.BackoffMax)
			failure = &store.DeliveryFailure{ID: d.ID, Cause: err.Error(), Next: next, GiveUp: giveUp}
			if giveUp {
				n.observe("given_up", 0)
				n.log.Error("notification given up after the retry period", "subscriptionId", sub.ID, "notificationId", d.NotificationID, "err", err)
			} else {
				n.observe("failed", 0)
				n.log.Warn("notification delivery failed; will retry", "subscriptionId", sub.ID, "notificationId", d.NotificationID,
					"attempt", d.Attempts+1, "retryIn", next, "err", err)
			}
			break
		}
		more := batch
		if round >= rounds || ctx.Err() != nil {
			more = 0 // release the lease
		}
		// What was sent is recorded even when the notifier is stopping.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.Timeout)
		ds, err = n.cfg.Store.EndDelivery(rctx, sub.ID, owner, delivered, failure, more, lease)
		cancel()
		if n.afterRecord != nil {
			n.afterRecord()
		}
		if err != nil {
			n.log.Warn("recording deliveries", "subscriptionId", sub.ID, "err", err)
			return true
		}
		if len(ds) == 0 {
			// Released. The worker claims again rather than wait for a
			// wake-up: one wake-up comes per transaction that queued
			// notifications, however many subscriptions they are for, and
			// one that came during this round may have gone to a worker
			// that found this subscription still leased and went back to
			// sleep — either way the notifications would wait for the poll.
			// The claim finds nothing when nothing is due.
			return true
		}
	}
}

func (n *Notifier) observe(result string, latency time.Duration) {
	if m := n.cfg.Metrics; m != nil {
		n.attempts[result].Inc()
		if result == "delivered" {
			m.NotificationLatency.Observe(latency.Seconds())
		}
	}
}

// backoff doubles from min per attempt, capped at max.
func backoff(attempts int, min, max time.Duration) time.Duration {
	d := min
	for i := 0; i < attempts && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

// Authentication is SOL003 SubscriptionAuthentication.
type Authentication struct {
	AuthType    []string `json:"authType"`
	ParamsBasic *struct {
		UserName string `json:"userName"`
		Password string `json:"password"`
	} `json:"paramsBasic,omitempty"`
	ParamsOauth2ClientCredentials *struct {
		ClientID       string `json:"clientId"`
		ClientPassword string `json:"clientPassword"`
		TokenEndpoint  string `json:"tokenEndpoint"`
	} `json:"paramsOauth2ClientCredentials,omitempty"`
}

func (n *Notifier) auth(sub *store.Subscription) (*Authentication, error) {
	if len(sub.Authentication) == 0 {
		return nil, nil
	}
	raw, err := n.cfg.Box.OpenJSON(sub.Authentication, store.SubscriptionAuthPlace(sub.ID))
	if err != nil {
		return nil, err
	}
	var a Authentication
	return &a, json.Unmarshal(raw, &a)
}

// send POSTs the notification d to sub (its body made of what the outbox
// keeps, not decoded).
func (n *Notifier) send(ctx context.Context, sub *store.Subscription, auth *Authentication, d store.Delivery) error {
	body := d.Body
	if body == nil { // queued by an older build
		b, err := lccn.Body(*d.Event, d.NotificationID)
		if err != nil {
			return err
		}
		body = b
	}
	b, err := lccn.AppendNotification(make([]byte, 0, len(body)+320), body, n.cfg.BaseURL, sub.ID, d.CreatedAt)
	if err != nil {
		return fmt.Errorf("notification %s: %w", d.NotificationID, err)
	}
	return n.post(ctx, sub, auth, b)
}

func (n *Notifier) post(ctx context.Context, sub *store.Subscription, auth *Authentication, b []byte) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.CallbackURI, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Version", "1.3.0")
	if err := n.authorize(ctx, req, auth, n.client); err != nil {
		return err
	}
	res, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %s", sub.CallbackURI, outbound.Describe(err))
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("POST %s answered %s (want 204)", sub.CallbackURI, outbound.Status(res.StatusCode))
	}
	return nil
}

// authorize adds BASIC or OAuth 2.0 client-credentials authorization; the
// token request goes through client.
func (n *Notifier) authorize(ctx context.Context, req *http.Request, a *Authentication, client *http.Client) error {
	if a == nil {
		return nil
	}
	for _, t := range a.AuthType {
		switch t {
		case "BASIC":
			if a.ParamsBasic != nil {
				req.SetBasicAuth(a.ParamsBasic.UserName, a.ParamsBasic.Password)
				return nil
			}
		case "OAUTH2_CLIENT_CREDENTIALS":
			if p := a.ParamsOauth2ClientCredentials; p != nil {
				tok, err := n.token(ctx, client, p.TokenEndpoint, p.ClientID, p.ClientPassword)
				if err != nil {
					return err
				}
				req.Header.Set("Authorization", "Bearer "+tok)
				return nil
			}
		}
	}
	return nil
}

type cachedToken struct {
	token string
	until time.Time
}

func (n *Notifier) token(ctx context.Context, client *http.Client, endpoint, id, secret string) (string, error) {
	key := endpoint + "|" + id
	if v, ok := n.tokens.Load(key); ok {
		if c := v.(cachedToken); time.Now().Before(c.until) {
			return c.token, nil
		}
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("tokenEndpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	res, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("token request to %s: %s", endpoint, outbound.Describe(err))
	}
	defer res.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token request to %s answered %s", endpoint, outbound.Status(res.StatusCode))
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&body); err != nil || body.AccessToken == "" {
		return "", fmt.Errorf("token endpoint %s returned no access_token", endpoint)
	}
	life := time.Duration(body.ExpiresIn) * time.Second
	if life <= 0 {
		life = 5 * time.Minute
	}
	n.tokens.Store(key, cachedToken{token: body.AccessToken, until: time.Now().Add(life * 9 / 10)})
	return body.AccessToken, nil
}

// TestCallback checks a callback URI the SOL003 way: GET must answer 204.
func (n *Notifier) TestCallback(ctx context.Context, uri string, a *Authentication) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Version", "1.3.0")
	if err := n.authorize(ctx, req, a, n.probe); err != nil {
		return err
	}
	res, err := n.probe.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s failed: %s", uri, outbound.Describe(err))
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode != http.StatusNoContent {
		return fmt.Errorf("GET %s answered %s; the notification endpoint must answer 204 No Content", uri, outbound.Status(res.StatusCode))
	}
	return nil
}

// Subscriptions is the service behind /vnflcm/v1/subscriptions.
type Subscriptions struct {
	n *Notifier
	// TestCallbacks sends the SOL003 GET to a new subscription's callbackUri (default on).
	TestCallbacks bool
}

// NewSubscriptions builds the service.
func NewSubscriptions(n *Notifier, testCallbacks bool) *Subscriptions {
	return &Subscriptions{n: n, TestCallbacks: testCallbacks}
}

// Request is LccnSubscriptionRequest.
type Request struct {
	CallbackURI    string          `json:"callbackUri"`
	Filter         *lccn.Filter    `json:"filter,omitempty"`
	Authentication json.RawMessage `json:"authentication,omitempty"`
}

// InvalidError is a request the caller must fix (HTTP 400 or 422).
type InvalidError struct {
	Detail        string
	Unprocessable bool
}

func (e *InvalidError) Error() string { return e.Detail }

// Create validates, tests the callback and stores a subscription. A duplicate
// returns the existing subscription and store.ErrDuplicateSubscription.
func (s *Subscriptions) Create(ctx context.Context, raw []byte) (*store.Subscription, error) {
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, &InvalidError{Detail: "request body is not an LccnSubscriptionRequest: " + err.Error()}
	}
	u, err := url.Parse(req.CallbackURI)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &InvalidError{Detail: fmt.Sprintf("callbackUri %q is not an absolute http(s) URL", req.CallbackURI)}
	}
	if err := s.n.cfg.Outbound.CheckURL(ctx, req.CallbackURI); err != nil {
		return nil, &InvalidError{Unprocessable: true, Detail: "callbackUri: " + err.Error()}
	}
	id := uuid.NewString()
	var auth *Authentication
	var sealed []byte
	if len(req.Authentication) > 0 && string(req.Authentication) != "null" {
		auth = &Authentication{}
		if err := json.Unmarshal(req.Authentication, auth); err != nil {
			return nil, &InvalidError{Detail: "authentication: " + err.Error()}
		}
		if err := auth.check(); err != nil {
			return nil, &InvalidError{Detail: err.Error()}
		}
		if p := auth.ParamsOauth2ClientCredentials; p != nil {
			if err := s.n.cfg.Outbound.CheckURL(ctx, p.TokenEndpoint); err != nil {
				return nil, &InvalidError{Unprocessable: true, Detail: "authentication.paramsOauth2ClientCredentials.tokenEndpoint: " + err.Error()}
			}
		}
		if sealed, err = s.n.cfg.Box.SealJSON(req.Authentication, store.SubscriptionAuthPlace(id)); err != nil {
			return nil, err
		}
	}
	if s.TestCallbacks {
		if err := s.n.TestCallback(ctx, req.CallbackURI, auth); err != nil {
			return nil, &InvalidError{Unprocessable: true, Detail: "the notification endpoint test failed: " + err.Error() +
				"; make the endpoint answer GET with 204, then subscribe again"}
		}
	}
	return s.n.cfg.Store.CreateSubscription(ctx, &store.Subscription{ID: id, CallbackURI: req.CallbackURI,
		Filter: req.Filter, Authentication: sealed})
}

func (a *Authentication) check() error {
	if len(a.AuthType) == 0 {
		return errors.New(`authentication: "authType" must list BASIC and/or OAUTH2_CLIENT_CREDENTIALS`)
	}
	for _, t := range a.AuthType {
		switch t {
		case "BASIC":
			if a.ParamsBasic == nil || a.ParamsBasic.UserName == "" {
				return errors.New(`authentication: BASIC needs "paramsBasic" with "userName" and "password"`)
			}
		case "OAUTH2_CLIENT_CREDENTIALS":
			p := a.ParamsOauth2ClientCredentials
			if p == nil || p.ClientID == "" || p.TokenEndpoint == "" {
				return errors.New(`authentication: OAUTH2_CLIENT_CREDENTIALS needs "paramsOauth2ClientCredentials" with "clientId", "clientPassword" and "tokenEndpoint"`)
			}
		case "TLS_CERT":
			return errors.New("authentication: TLS_CERT is not supported; use BASIC or OAUTH2_CLIENT_CREDENTIALS")
		default:
			return fmt.Errorf("authentication: unknown authType %q", t)
		}
	}
	return nil
}

// Get reads a subscription.
func (s *Subscriptions) Get(ctx context.Context, id string) (*store.Subscription, error) {
	return s.n.cfg.Store.GetSubscription(ctx, id)
}

// List pages through subscriptions.
func (s *Subscriptions) List(ctx context.Context, p store.Page) ([]*store.Subscription, bool, error) {
	return s.n.cfg.Store.ListSubscriptions(ctx, p)
}

// Delete removes a subscription; its undelivered notifications go with it.
func (s *Subscriptions) Delete(ctx context.Context, id string) error {
	return s.n.cfg.Store.DeleteSubscription(ctx, id)
}
