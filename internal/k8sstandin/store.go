package k8sstandin

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Store errors.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrConflict = errors.New("revision conflict")
)

// KV is one stored object.
type KV struct {
	Key   string
	Value []byte
	// Rev is the object's last modification revision (its resourceVersion).
	Rev int64
}

// Store is the API server's persistence, shaped like the subset of etcd that
// kube-apiserver uses: keys under /registry/..., revisions for optimistic
// concurrency.
type Store interface {
	Get(ctx context.Context, key string) (KV, error)
	List(ctx context.Context, prefix string) ([]KV, error)
	// Create fails with ErrExists when the key exists.
	Create(ctx context.Context, key string, val []byte) (int64, error)
	// Update replaces an existing key; rev > 0 must equal its current
	// revision (ErrConflict otherwise).
	Update(ctx context.Context, key string, val []byte, rev int64) (int64, error)
	// Delete removes a key; rev > 0 must equal its current revision.
	Delete(ctx context.Context, key string, rev int64) error
}

// MemStore is a Store in memory, optionally persisted to a JSON file after
// every change (the stand-in's store for a single master without etcd, and
// for unit tests).
type MemStore struct {
	mu   sync.Mutex
	rev  int64
	data map[string]KV
	file string
}

type memFile struct {
	Rev  int64           `json:"rev"`
	Data map[string]memV `json:"data"`
}

type memV struct {
	Value json.RawMessage `json:"value"`
	Rev   int64           `json:"rev"`
}

// NewMemStore returns a store kept in memory and, when file is not empty,
// loaded from and saved to that file.
func NewMemStore(file string) (*MemStore, error) {
	s := &MemStore{data: map[string]KV{}, file: file}
	if file == "" {
		return s, nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var mf memFile
	if err := json.Unmarshal(b, &mf); err != nil {
		return nil, fmt.Errorf("store %s: %w", file, err)
	}
	s.rev = mf.Rev
	for k, v := range mf.Data {
		s.data[k] = KV{Key: k, Value: []byte(v.Value), Rev: v.Rev}
	}
	return s, nil
}

func (s *MemStore) save() error {
	if s.file == "" {
		return nil
	}
	mf := memFile{Rev: s.rev, Data: map[string]memV{}}
	for k, v := range s.data {
		mf.Data[k] = memV{Value: json.RawMessage(v.Value), Rev: v.Rev}
	}
	b, err := json.Marshal(mf)
	if err != nil {
		return err
	}
	return writeFile(s.file, b, 0o600)
}

// Get implements Store.
func (s *MemStore) Get(_ context.Context, key string) (KV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv, ok := s.data[key]
	if !ok {
		return KV{}, ErrNotFound
	}
	return kv, nil
}

// List implements Store.
func (s *MemStore) List(_ context.Context, prefix string) ([]KV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []KV
	for k, v := range s.data {
		if strings.HasPrefix(k, prefix) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Create implements Store.
func (s *MemStore) Create(_ context.Context, key string, val []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.data[key]; ok {
		return 0, ErrExists
	}
	s.rev++
	s.data[key] = KV{Key: key, Value: append([]byte(nil), val...), Rev: s.rev}
	return s.rev, s.save()
}

// Update implements Store.
func (s *MemStore) Update(_ context.Context, key string, val []byte, rev int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.data[key]
	if !ok {
		return 0, ErrNotFound
	}
	if rev > 0 && cur.Rev != rev {
		return 0, ErrConflict
	}
	s.rev++
	s.data[key] = KV{Key: key, Value: append([]byte(nil), val...), Rev: s.rev}
	return s.rev, s.save()
}

// Delete implements Store.
func (s *MemStore) Delete(_ context.Context, key string, rev int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.data[key]
	if !ok {
		return ErrNotFound
	}
	if rev > 0 && cur.Rev != rev {
		return ErrConflict
	}
	delete(s.data, key)
	s.rev++
	return s.save()
}

// EtcdStore is a Store in a real etcd v3 cluster, spoken to through etcd's
// JSON gateway (/v3/kv/...) over mutual TLS, so no etcd client library is
// needed.
type EtcdStore struct {
	Endpoints []string
	Client    *http.Client
}

// NewEtcdStore builds a client for the endpoints (https://host:2379) with the
// given CA and client certificate files; empty files mean plain HTTP.
func NewEtcdStore(endpoints []string, caFile, certFile, keyFile string) (*EtcdStore, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}
	if caFile != "" {
		pool := x509.NewCertPool()
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: no certificate", caFile)
		}
		cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if certFile != "" {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, err
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		tr.TLSClientConfig = cfg
	}
	return &EtcdStore{Endpoints: endpoints, Client: &http.Client{Transport: tr, Timeout: 15 * time.Second}}, nil
}

// Call posts a JSON request to an etcd gateway path (e.g.
// "/v3/cluster/member/list") on the first endpoint that answers.
func (e *EtcdStore) Call(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var last error
	for _, ep := range e.Endpoints {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(ep, "/")+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		hr.Header.Set("Content-Type", "application/json")
		r, err := e.Client.Do(hr)
		if err != nil {
			last = err
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			var ge struct {
				Error   string `json:"error"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(b, &ge)
			msg := ge.Message
			if msg == "" {
				msg = ge.Error
			}
			if msg == "" {
				msg = strings.TrimSpace(string(b))
			}
			return fmt.Errorf("etcd %s: %s: %s", ep, r.Status, msg)
		}
		if resp != nil {
			if err := json.Unmarshal(b, resp); err != nil {
				return fmt.Errorf("etcd %s%s: %w", ep, path, err)
			}
		}
		return nil
	}
	if last == nil {
		last = errors.New("no endpoints")
	}
	return fmt.Errorf("etcd unreachable: %w", last)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// etcd's gateway encodes int64 as strings.
type i64 int64

func (v *i64) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*v = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	*v = i64(n)
	return err
}

type etcdHeader struct {
	Revision i64 `json:"revision"`
}

type etcdKV struct {
	Key         []byte `json:"key"`
	Value       []byte `json:"value"`
	ModRevision i64    `json:"mod_revision"`
}

type etcdRangeResp struct {
	Header etcdHeader `json:"header"`
	KVs    []etcdKV   `json:"kvs"`
}

// prefixEnd is etcd's range_end for "every key with this prefix".
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}

// Get implements Store.
func (e *EtcdStore) Get(ctx context.Context, key string) (KV, error) {
	var r etcdRangeResp
	if err := e.Call(ctx, "/v3/kv/range", map[string]any{"key": b64(key)}, &r); err != nil {
		return KV{}, err
	}
	if len(r.KVs) == 0 {
		return KV{}, ErrNotFound
	}
	return KV{Key: key, Value: r.KVs[0].Value, Rev: int64(r.KVs[0].ModRevision)}, nil
}

// List implements Store.
func (e *EtcdStore) List(ctx context.Context, prefix string) ([]KV, error) {
	var r etcdRangeResp
	if err := e.Call(ctx, "/v3/kv/range", map[string]any{"key": b64(prefix), "range_end": b64(prefixEnd(prefix))}, &r); err != nil {
		return nil, err
	}
	out := make([]KV, 0, len(r.KVs))
	for _, kv := range r.KVs {
		out = append(out, KV{Key: string(kv.Key), Value: kv.Value, Rev: int64(kv.ModRevision)})
	}
	return out, nil
}

type etcdTxnResp struct {
	Header    etcdHeader `json:"header"`
	Succeeded bool       `json:"succeeded"`
}

func (e *EtcdStore) txn(ctx context.Context, cmp map[string]any, op map[string]any) (bool, int64, error) {
	var r etcdTxnResp
	req := map[string]any{"compare": []any{cmp}, "success": []any{op}}
	if err := e.Call(ctx, "/v3/kv/txn", req, &r); err != nil {
		return false, 0, err
	}
	return r.Succeeded, int64(r.Header.Revision), nil
}

// Create implements Store.
func (e *EtcdStore) Create(ctx context.Context, key string, val []byte) (int64, error) {
	ok, rev, err := e.txn(ctx,
		map[string]any{"key": b64(key), "result": "EQUAL", "target": "CREATE", "create_revision": "0"},
		map[string]any{"request_put": map[string]any{"key": b64(key), "value": base64.StdEncoding.EncodeToString(val)}})
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, ErrExists
	}
	return rev, nil
}

// Update implements Store.
func (e *EtcdStore) Update(ctx context.Context, key string, val []byte, rev int64) (int64, error) {
	cmp := map[string]any{"key": b64(key), "result": "EQUAL", "target": "MOD", "mod_revision": strconv.FormatInt(rev, 10)}
	if rev <= 0 {
		cmp = map[string]any{"key": b64(key), "result": "GREATER", "target": "CREATE", "create_revision": "0"}
	}
	ok, nrev, err := e.txn(ctx, cmp,
		map[string]any{"request_put": map[string]any{"key": b64(key), "value": base64.StdEncoding.EncodeToString(val)}})
	if err != nil {
		return 0, err
	}
	if !ok {
		if _, err := e.Get(ctx, key); errors.Is(err, ErrNotFound) {
			return 0, ErrNotFound
		}
		return 0, ErrConflict
	}
	return nrev, nil
}

// Delete implements Store.
func (e *EtcdStore) Delete(ctx context.Context, key string, rev int64) error {
	cmp := map[string]any{"key": b64(key), "result": "EQUAL", "target": "MOD", "mod_revision": strconv.FormatInt(rev, 10)}
	if rev <= 0 {
		cmp = map[string]any{"key": b64(key), "result": "GREATER", "target": "CREATE", "create_revision": "0"}
	}
	ok, _, err := e.txn(ctx, cmp, map[string]any{"request_delete_range": map[string]any{"key": b64(key)}})
	if err != nil {
		return err
	}
	if !ok {
		if _, err := e.Get(ctx, key); errors.Is(err, ErrNotFound) {
			return ErrNotFound
		}
		return ErrConflict
	}
	return nil
}

// EtcdMember is one member of the etcd cluster.
type EtcdMember struct {
	ID         string   `json:"ID"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	IsLearner  bool     `json:"isLearner"`
}

// MemberList lists the cluster's members.
func (e *EtcdStore) MemberList(ctx context.Context) ([]EtcdMember, error) {
	var r struct {
		Members []EtcdMember `json:"members"`
	}
	err := e.Call(ctx, "/v3/cluster/member/list", map[string]any{}, &r)
	return r.Members, err
}

// MemberAdd adds a voting member and returns the new member list.
func (e *EtcdStore) MemberAdd(ctx context.Context, peerURL string) (EtcdMember, []EtcdMember, error) {
	var r struct {
		Member  EtcdMember   `json:"member"`
		Members []EtcdMember `json:"members"`
	}
	err := e.Call(ctx, "/v3/cluster/member/add", map[string]any{"peerURLs": []string{peerURL}}, &r)
	return r.Member, r.Members, err
}

// MemberRemove removes a member by its (decimal) ID.
func (e *EtcdStore) MemberRemove(ctx context.Context, id string) error {
	return e.Call(ctx, "/v3/cluster/member/remove", map[string]any{"ID": id}, nil)
}
