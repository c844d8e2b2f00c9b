package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// leanClient is the bench's HTTP/1.1 client for what it measures (the
// reads phase's GETs, the engine phase's task POSTs), lean as pgbench is on
// the other side of the ratio (wrk's way): one keep-alive connection, the
// request bytes built once, no per-request allocation. It is still a real
// client. For each request it writes the whole request, reads the status
// line, every header line up to the blank line and exactly Content-Length
// bytes of body, and keeps the connection only when the server does
// (otherwise it dials again). A chunked or truncated body, or none without
// Content-Length, is an error that stops the measurement; get also accepts
// only a 200 whose body is the JSON object holding "id":"<the requested
// id>".
type leanClient struct {
	addr    string
	conn    net.Conn
	br      *bufio.Reader
	body    []byte
	timeout time.Duration
	renew   time.Time // when the connection's deadline is moved on
}

// leanRequests builds each id's GET request and the bytes its response body
// must contain.
func leanRequests(base, pathPrefix string, ids []string) (reqs, wants [][]byte, addr string, err error) {
	if addr, err = leanAddr(base); err != nil {
		return nil, nil, "", err
	}
	for _, id := range ids {
		reqs = append(reqs, fmt.Appendf(nil, "GET %s%s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n\r\n", pathPrefix, id, addr))
		wants = append(wants, []byte(`"id":"`+id+`"`))
	}
	return reqs, wants, addr, nil
}

// leanAddr is the host:port of a plain-http base URL, which is all the lean
// client speaks.
func leanAddr(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("lean client: %s is not plain http", base)
	}
	return u.Host, nil
}

func newLeanClient(addr string, timeout time.Duration) *leanClient {
	return &leanClient{addr: addr, timeout: timeout}
}

func (c *leanClient) Close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// get sends req and checks its response; the body returned is valid until
// the next call.
func (c *leanClient) get(req, want []byte) ([]byte, error) {
	res, err := c.exchange(req)
	if err != nil {
		return res.body, err
	}
	if res.status != 200 {
		return res.body, fmt.Errorf("GET instance: %d %s", res.status, res.body)
	}
	if b := res.body; len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' || !bytes.Contains(b, want) {
		return b, fmt.Errorf("lean client: the body is not the JSON object holding %s: %.200s", want, b)
	}
	return res.body, nil
}

// leanResponse is a response as the lean client read it; body is valid
// until the client's next call.
type leanResponse struct {
	status   int
	location string // the Location header, "" when none
	body     []byte
}

// exchange writes req, whole, and reads its response, keeping the
// connection when the server does.
func (c *leanClient) exchange(req []byte) (leanResponse, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, c.timeout)
		if err != nil {
			return leanResponse{}, err
		}
		c.conn, c.renew = conn, time.Time{}
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 32<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	// A server that stops answering fails the run instead of hanging it:
	// each exchange has at least half the timeout left (moving the deadline
	// at every request would cost a timer update each).
	if now := time.Now(); now.After(c.renew) {
		if err := c.conn.SetDeadline(now.Add(c.timeout)); err != nil {
			c.Close()
			return leanResponse{}, err
		}
		c.renew = now.Add(c.timeout / 2)
	}
	if _, err := c.conn.Write(req); err != nil {
		c.Close()
		return leanResponse{}, err
	}
	res, keep, err := c.readResponse()
	if err != nil || !keep {
		c.Close()
	}
	return res, err
}

var (
	http11       = []byte("HTTP/1.1 ")
	hdrLength    = []byte("content-length")
	hdrEncoding  = []byte("transfer-encoding")
	hdrConn      = []byte("connection")
	hdrLocation  = []byte("location")
	tokenClose   = []byte("close")
	errTruncated = errors.New("lean client: response ends before its headers do")
)

// readResponse reads one response: the status line, the headers, and a
// Content-Length body into c.body.
func (c *leanClient) readResponse() (res leanResponse, keep bool, err error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return res, false, fmt.Errorf("lean client: status line: %w", err)
	}
	if !bytes.HasPrefix(line, http11) || len(line) < len(http11)+3 {
		return res, false, fmt.Errorf("lean client: not an HTTP/1.1 status line: %q", line)
	}
	if res.status, err = strconv.Atoi(string(line[len(http11) : len(http11)+3])); err != nil {
		return res, false, fmt.Errorf("lean client: status line %q: %w", line, err)
	}
	length, keep := -1, true
	for {
		line, err = c.br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errTruncated
			}
			return res, false, fmt.Errorf("lean client: headers: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			return res, false, fmt.Errorf("lean client: header line without colon: %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, hdrLength):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return res, false, fmt.Errorf("lean client: Content-Length %q", value)
			}
		case bytes.EqualFold(name, hdrEncoding):
			return res, false, fmt.Errorf("lean client: status %d with Transfer-Encoding %s: only Content-Length bodies are read", res.status, value)
		case bytes.EqualFold(name, hdrConn):
			if bytes.EqualFold(value, tokenClose) {
				keep = false
			}
		case bytes.EqualFold(name, hdrLocation):
			res.location = string(value)
		}
	}
	if length < 0 {
		return res, false, fmt.Errorf("lean client: status %d without Content-Length", res.status)
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	res.body = c.body[:length]
	if _, err := io.ReadFull(c.br, res.body); err != nil {
		return res, false, fmt.Errorf("lean client: body of %d bytes: %w", length, err)
	}
	return res, keep, nil
}
