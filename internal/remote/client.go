package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// Defaults of Target.
const (
	DefaultPort           = 22
	DefaultConnectTimeout = 20 * time.Second
	DefaultMaxWait        = 5 * time.Minute
	DefaultInitialBackoff = 200 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	DefaultKeepAlive      = 15 * time.Second
)

// Target says how to reach and log in to a host and how to verify it.
type Target struct {
	// Host is an IP address or name; Port defaults to 22.
	Host string
	Port int
	// User to log in as.
	User string
	// Password for password and keyboard-interactive authentication, and
	// for sudo (see SudoPassword). Masked everywhere.
	Password string
	// PrivateKey is a private key in PEM (OpenSSH, PKCS#1, PKCS#8, SEC1),
	// encrypted with Passphrase when that is set. Tried before the password.
	PrivateKey []byte
	Passphrase string
	// SudoPassword is given to sudo when it asks; default Password.
	SudoPassword string

	// HostKeyPolicy decides how the host key is verified (default
	// HostKeyPin). Pins and PinKey are required for every policy except
	// InsecureIgnoreHostKey, unless PublishedFingerprints are given (then
	// the key is checked against those and nothing is pinned).
	HostKeyPolicy HostKeyPolicy
	Pins          PinStore
	PinKey        PinKey
	// PublishedFingerprints are the host key fingerprints the cloud
	// published for this server ("SHA256:..." or MD5 hex pairs; see
	// FingerprintsFromConsole). When there is no pin yet, the offered key
	// must match one of them, and is then pinned.
	PublishedFingerprints []string
	// HostKeyTrust is how a first contact (no pin yet, or HostKeyRepin)
	// trusts the key the server offers: TrustPublished, TrustTOFU or
	// TrustPinned (see HostKeyTrust). Empty keeps HostKeyPolicy's rule.
	HostKeyTrust HostKeyTrust
	// FetchFingerprints reads the fingerprints the cloud published now
	// (the console log). Under TrustPublished without
	// PublishedFingerprints, Dial calls it every FingerprintPoll (default
	// 3 s) until it returns some or FingerprintWait (default 3 min) passed.
	FetchFingerprints func(ctx context.Context) ([]string, error)
	FingerprintWait   time.Duration
	FingerprintPoll   time.Duration

	// Dialer opens the TCP connection; default a net.Dialer. Tests pass
	// testhosts.Network.Dial.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

	// ConnectTimeout bounds one attempt: TCP connect, SSH handshake and
	// authentication (default 20 s).
	ConnectTimeout time.Duration
	// MaxWait bounds the whole Dial including retries while the host boots
	// (default 5 min); the context's deadline applies too. Negative: a
	// single attempt.
	MaxWait time.Duration
	// InitialBackoff and MaxBackoff shape the exponential backoff between
	// attempts (defaults 200 ms and 5 s; ±20 % jitter).
	InitialBackoff, MaxBackoff time.Duration
	// RetryAuth retries authentication failures within MaxWait, for hosts
	// whose password is set late in the boot (cloud-init). The final error
	// is still an *AuthError.
	RetryAuth bool
	// OnRetry, when set, is told of every failed attempt that will be
	// retried (the attempt's number and its error, secrets masked), so that
	// a caller can show that it is waiting for the host and why.
	OnRetry func(ctx context.Context, attempt int, err error)

	// KeepAlive is the interval of keepalive requests on an idle or busy
	// connection; a connection that does not answer three in a row is
	// closed, so that commands on a dead host fail instead of hanging.
	// Default 15 s; negative disables.
	KeepAlive time.Duration

	// Secrets are masked in every error, output line and log of this
	// client, besides Password, Passphrase and SudoPassword.
	Secrets []string
	// Logger receives connection and command logs (secrets masked);
	// default: none.
	Logger *slog.Logger
}

func (t *Target) addr() string {
	port := t.Port
	if port == 0 {
		port = DefaultPort
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(port))
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Client is an SSH connection to one host. Its methods are safe for
// concurrent use: commands run on separate SSH sessions of the connection.
type Client struct {
	host     string // "host:port"
	user     string
	conn     *ssh.Client
	hostKey  ssh.PublicKey
	log      *slog.Logger
	sudoPass string

	maskMu sync.RWMutex
	mask   *masker

	sudoMu   sync.Mutex
	sudoMode sudoMode

	sftpMu sync.Mutex
	noSFTP bool

	closeOnce sync.Once
	done      chan struct{}
	closeErr  error

	lostMu sync.Mutex
	lost   error // why the connection ended, if not by Close
}

// ErrConnectionLost is in the chain of errors of commands whose connection
// died (the host stopped answering keepalives or closed the connection).
var ErrConnectionLost = errors.New("connection to the host lost")

func (c *Client) setLost(err error) {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	if c.lost == nil {
		c.lost = err
	}
}

// connLost returns why the connection ended unexpectedly, or nil.
func (c *Client) connLost() error {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	return c.lost
}

var _ Executor = (*Client)(nil)

// Executor is what management drivers use to run things on a host; *Client
// implements it, tests may fake it.
type Executor interface {
	// Host is the address commands go to ("host:port"), for messages.
	Host() string
	Run(ctx context.Context, cmd string, opts RunOpts) (Result, error)
	Upload(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	UploadAsRoot(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	Close() error
}

// Host is the address the client is connected to ("host:port").
func (c *Client) Host() string { return c.host }

// User is the login user.
func (c *Client) User() string { return c.user }

// HostKey is the verified host key of the server.
func (c *Client) HostKey() ssh.PublicKey { return c.hostKey }

// SSH exposes the underlying connection (for port forwarding and the like).
func (c *Client) SSH() *ssh.Client { return c.conn }

// AddSecrets adds values to mask in everything this client reports from now
// on (for secrets learned during an operation, such as a join token).
func (c *Client) AddSecrets(values ...string) {
	c.maskMu.Lock()
	defer c.maskMu.Unlock()
	c.mask = c.mask.with(values)
}

func (c *Client) masker() *masker {
	c.maskMu.RLock()
	defer c.maskMu.RUnlock()
	return c.mask
}

// Close closes the connection; running commands fail.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.closeErr = c.conn.Close()
	})
	if errors.Is(c.closeErr, net.ErrClosed) {
		return nil
	}
	return c.closeErr
}

// Dial connects to the host, retrying while it is unreachable (a VM still
// booting) with exponential backoff until Target.MaxWait or the context's
// deadline, verifies its host key (before authenticating: a mismatch fails
// at once with *HostKeyMismatchError and nothing is sent), authenticates
// (failure: *AuthError, not retried unless RetryAuth) and pins the key on
// first contact. Giving up on an unreachable host yields a *ConnectError.
func Dial(ctx context.Context, t Target) (*Client, error) {
	if t.Host == "" || t.User == "" {
		return nil, errors.New("remote: Target.Host and Target.User are required")
	}
	addr := t.addr()
	if err := resolveTrust(ctx, &t, addr); err != nil {
		return nil, err
	}
	hk := newHostKeyCheck(&t, addr)
	if err := hk.validate(); err != nil {
		return nil, err
	}
	auth, err := authMethods(&t)
	if err != nil {
		return nil, err
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sudoPass := t.SudoPassword
	if sudoPass == "" {
		sudoPass = t.Password
	}
	mask := newMasker([]string{t.Password, t.Passphrase, t.SudoPassword}, t.Secrets)
	log = log.With("host", addr, "user", t.User)

	dial := t.Dialer
	if dial == nil {
		d := &net.Dialer{KeepAlive: 15 * time.Second}
		dial = d.DialContext
	}
	maxWait := orDefault(t.MaxWait, DefaultMaxWait)
	if maxWait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, maxWait)
		defer cancel()
	}
	attemptTimeout := orDefault(t.ConnectTimeout, DefaultConnectTimeout)
	backoff := orDefault(t.InitialBackoff, DefaultInitialBackoff)
	maxBackoff := orDefault(t.MaxBackoff, DefaultMaxBackoff)

	start := time.Now()
	var lastErr error
	giveUp := func(attempts int, err error) error {
		var ae *AuthError
		if errors.As(err, &ae) {
			return err
		}
		cause := ctx.Err()
		if cause == nil && expired(ctx) {
			cause = context.DeadlineExceeded
		}
		log.Warn("ssh connect gave up", "attempts", attempts, "err", mask.mask(err.Error()))
		return &ConnectError{Host: addr, User: t.User, Attempts: attempts, Elapsed: time.Since(start), Err: err, Cause: cause}
	}
	for attempt := 1; ; attempt++ {
		conn, err := dialOnce(ctx, dial, addr, attemptTimeout, &t, auth, hk)
		if err == nil {
			log.Info("ssh connected", "attempts", attempt, "elapsed", time.Since(start).Round(time.Millisecond),
				"host_key", ssh.FingerprintSHA256(hk.offeredKey()), "host_key_policy", t.HostKeyPolicy.String())
			c := &Client{host: addr, user: t.User, conn: conn, hostKey: hk.offeredKey(), log: log,
				sudoPass: sudoPass, mask: mask, done: make(chan struct{})}
			go c.watch(orDefault(t.KeepAlive, DefaultKeepAlive))
			return c, nil
		}
		err = classify(ctx, err, &t, addr)
		var ae *AuthError
		var me *HostKeyMismatchError
		if errors.As(err, &me) && me.Source == "published" && !hk.triedPublished() {
			// The key the server prefers may just not be among the
			// published ones: ask for its other keys before refusing.
			if algos := publishedAlgos(ctx, &t, addr, me.KeyType); algos != nil {
				log.Info("the server's preferred host key was not published; using its published one", "algorithms", algos)
				hk.preferAlgos(algos)
				attempt--
				continue
			}
		}
		if errors.As(err, &me) || errors.Is(err, ErrHostKeyUnknown) || (errors.As(err, &ae) && !t.RetryAuth) {
			// Definitive answers from the host: never retried.
			log.Warn("ssh connect failed", "attempt", attempt, "err", mask.mask(err.Error()))
			return nil, err
		}
		if expired(ctx) {
			// This attempt was cut short by the overall deadline; the
			// previous one says more about the host.
			if lastErr != nil {
				return nil, giveUp(attempt-1, lastErr)
			}
			return nil, giveUp(attempt, err)
		}
		if !retryable(err, t.RetryAuth) {
			log.Warn("ssh connect failed", "attempt", attempt, "err", mask.mask(err.Error()))
			return nil, &ConnectError{Host: addr, User: t.User, Attempts: attempt, Elapsed: time.Since(start), Err: err}
		}
		lastErr = err
		if maxWait < 0 {
			return nil, giveUp(attempt, err)
		}
		wait := jitter(backoff)
		backoff = min(2*backoff, maxBackoff)
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		log.Debug("ssh connect attempt failed, retrying", "attempt", attempt, "err", mask.mask(err.Error()), "wait", wait)
		if t.OnRetry != nil {
			t.OnRetry(ctx, attempt, errors.New(mask.mask(err.Error())))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
		if expired(ctx) {
			return nil, giveUp(attempt, err)
		}
	}
}

// expired reports a context that is done or past its deadline (the
// context's own timer may not have fired yet).
func expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// dialOnce makes one attempt: connect, handshake (host key check inside),
// authenticate, pin.
func dialOnce(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string,
	timeout time.Duration, t *Target, auth []ssh.AuthMethod, hk *hostKeyCheck) (*ssh.Client, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	algos, err := hk.prepare(actx)
	if err != nil {
		return nil, permanentError{err}
	}
	nc, err := dial(actx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// ssh.NewClientConn takes no context: bound it with the deadline and
	// close the socket if the context ends first.
	if dl, ok := actx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(actx, func() { nc.Close() })
	cfg := &ssh.ClientConfig{
		User:              t.User,
		Auth:              auth,
		HostKeyCallback:   hk.callback,
		HostKeyAlgorithms: algos,
		Timeout:           timeout,
	}
	sc, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	if !stop() || err != nil {
		nc.Close()
		if err == nil {
			err = actx.Err()
		}
		if ctx.Err() == nil && actx.Err() != nil {
			err = fmt.Errorf("%w (attempt timed out after %v)", err, timeout)
		}
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	client := ssh.NewClient(sc, chans, reqs)
	if err := hk.commit(ctx); err != nil {
		client.Close()
		return nil, permanentError{err}
	}
	return client, nil
}

// permanentError marks an error Dial must not retry.
type permanentError struct{ error }

func (p permanentError) Unwrap() error { return p.error }

var attemptedRE = regexp.MustCompile(`attempted methods \[([^\]]*)\]`)

// classify turns x/crypto's errors into ours.
func classify(ctx context.Context, err error, t *Target, addr string) error {
	var pe permanentError
	if errors.As(err, &pe) {
		return pe.error
	}
	var me *HostKeyMismatchError
	if errors.As(err, &me) {
		return me
	}
	var ne *ssh.AlgorithmNegotiationError
	if errors.As(err, &ne) && ne.What == "host key" && t.HostKeyPolicy != InsecureIgnoreHostKey {
		// The server offers none of the pinned key types: its keys changed.
		if fe := probeHostKey(ctx, t, addr); fe != nil {
			return fe
		}
	}
	msg := err.Error()
	if strings.Contains(msg, "unable to authenticate") {
		var methods []string
		if m := attemptedRE.FindStringSubmatch(msg); m != nil {
			for _, f := range strings.Fields(m[1]) {
				if f != "none" {
					methods = append(methods, f)
				}
			}
		}
		return &AuthError{User: t.User, Host: addr, Methods: methods, Err: err}
	}
	return err
}

// probeHostKey connects once more offering every algorithm, only to learn
// which key the server has now, for the mismatch error. It never
// authenticates.
func probeHostKey(ctx context.Context, t *Target, addr string) error {
	hk := newHostKeyCheck(t, addr)
	ctx, cancel := context.WithTimeout(ctx, orDefault(t.ConnectTimeout, DefaultConnectTimeout))
	defer cancel()
	if _, err := hk.prepare(ctx); err != nil || len(hk.pins) == 0 {
		return nil
	}
	got := probeKey(ctx, t, addr, firstContactAlgos)
	e := hk.mismatch(got, pinFingerprints(hk.pins), "pinned")
	if got == nil {
		e.Got = fmt.Sprintf("no key of the pinned type(s) %s", strings.Join(pinTypes(hk.pins), ", "))
	}
	return e
}

// probeKey returns the host key the server presents for algos (nil if
// none), without authenticating.
func probeKey(ctx context.Context, t *Target, addr string, algos []string) ssh.PublicKey {
	dial := t.Dialer
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	var got ssh.PublicKey
	_, _, _, _ = ssh.NewClientConn(nc, addr, &ssh.ClientConfig{
		User:              t.User,
		HostKeyAlgorithms: algos,
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			got = key
			return errors.New("probe done")
		},
	})
	return got
}

// keyFamilies are the host key algorithm groups a server has one key each
// for.
var keyFamilies = [][]string{
	{ssh.KeyAlgoED25519},
	{ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521},
	{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256},
}

// publishedAlgos looks for a key among the server's other keys that matches
// the published fingerprints, for a server whose preferred key was not
// published (a list with only its ECDSA fingerprint, say). It returns the
// algorithms that make the server present that key, or nil.
func publishedAlgos(ctx context.Context, t *Target, addr string, offered string) []string {
	ctx, cancel := context.WithTimeout(ctx, orDefault(t.ConnectTimeout, DefaultConnectTimeout))
	defer cancel()
	for _, fam := range keyFamilies {
		if slices.Contains(fam, offered) || (offered == ssh.KeyAlgoRSA && slices.Contains(fam, ssh.KeyAlgoRSASHA256)) {
			continue
		}
		if key := probeKey(ctx, t, addr, fam); key != nil && matchesPublished(key, t.PublishedFingerprints) {
			return algosForKeyType(key.Type())
		}
	}
	return nil
}

// retryable tells transient failures (host booting, sshd starting, network
// blips) from permanent ones.
func retryable(err error, retryAuth bool) bool {
	var ae *AuthError
	if errors.As(err, &ae) {
		return retryAuth
	}
	var me *HostKeyMismatchError
	if errors.As(err, &me) || errors.Is(err, ErrHostKeyUnknown) {
		return false
	}
	var pe permanentError
	if errors.As(err, &pe) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EHOSTDOWN, syscall.ENETDOWN, syscall.ETIMEDOUT, syscall.EPIPE} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTimeout || dnsErr.IsTemporary
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	// Errors flattened to text somewhere along the way.
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset", "no route to host", "network is unreachable",
		"i/o timeout", "handshake failed: EOF", "broken pipe"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func authMethods(t *Target) ([]ssh.AuthMethod, error) {
	var methods []ssh.AuthMethod
	if len(t.PrivateKey) > 0 {
		var signer ssh.Signer
		var err error
		if t.Passphrase != "" {
			signer, err = ssh.ParsePrivateKeyWithPassphrase(t.PrivateKey, []byte(t.Passphrase))
		} else {
			signer, err = ssh.ParsePrivateKey(t.PrivateKey)
		}
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			return nil, errors.New("remote: the private key is encrypted: set Target.Passphrase")
		}
		if err != nil {
			// Never echo the key material; x/crypto's messages do not.
			return nil, fmt.Errorf("remote: cannot use the private key: %w", err)
		}
		methods = append(methods, ssh.PublicKeys(signer))
	}
	if t.Password != "" {
		pw := t.Password
		methods = append(methods, ssh.Password(pw))
		// Some sshd configurations (PAM, PasswordAuthentication no with
		// KbdInteractiveAuthentication yes) only offer keyboard-interactive.
		rounds := 0
		methods = append(methods, ssh.KeyboardInteractive(func(_, _ string, questions []string, echos []bool) ([]string, error) {
			if len(questions) == 0 {
				return nil, nil // an informational round
			}
			if rounds++; rounds > 2 {
				return nil, errors.New("keyboard-interactive: password rejected")
			}
			answers := make([]string, len(questions))
			for i := range questions {
				if i < len(echos) && echos[i] {
					continue // not a password prompt; leave it empty
				}
				answers[i] = pw
			}
			return answers, nil
		}))
	}
	if len(methods) == 0 {
		return nil, errors.New("remote: no credentials: set Target.Password or Target.PrivateKey")
	}
	return methods, nil
}

// watch sends keepalives and closes the connection when the server stops
// answering; it ends when the connection does.
func (c *Client) watch(interval time.Duration) {
	ended := make(chan struct{})
	go func() {
		err := c.conn.Wait()
		select {
		case <-c.done: // closed by us
		default:
			if err == nil || errors.Is(err, io.EOF) {
				err = errors.New("closed by the host")
			}
			c.setLost(fmt.Errorf("%w: %w", ErrConnectionLost, err))
		}
		close(ended)
	}()
	if interval < 0 {
		<-ended
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	missed := 0
	for {
		select {
		case <-ended:
			return
		case <-c.done:
			return
		case <-tick.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.conn.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case err := <-reply:
			if err != nil {
				return // the connection is gone; commands already fail
			}
			missed = 0
		case <-time.After(interval):
			missed++
			if missed >= 3 {
				c.log.Warn("ssh connection not answering keepalives; closing it", "missed", missed)
				c.setLost(fmt.Errorf("%w: no answer to %d keepalives in %v", ErrConnectionLost, missed, 3*interval))
				c.conn.Close()
				return
			}
		case <-ended:
			return
		}
	}
}
