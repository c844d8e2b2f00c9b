package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/pkg/sftp"
)

// posixMode renders mode's permission and setuid/setgid/sticky bits as
// chmod's octal argument.
func posixMode(mode fs.FileMode) string {
	m := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return fmt.Sprintf("%04o", m)
}

// Upload writes data to path on the host as the login user, with the given
// mode (permission bits, setuid/setgid/sticky honoured). The file is
// replaced atomically: data goes to a temporary file in the same directory,
// created 0600, then chmod and rename. The parent directory must exist.
// It uses SFTP, or, when the server has no sftp subsystem, `cat` on an exec
// channel. Cancelling ctx aborts the transfer and leaves path unchanged.
func (c *Client) Upload(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	if err := checkUploadPath(p); err != nil {
		return err
	}
	c.sftpMu.Lock()
	noSFTP := c.noSFTP
	c.sftpMu.Unlock()
	if !noSFTP {
		err := c.sftpUpload(ctx, p, data, mode)
		if !errors.Is(err, errNoSFTP) {
			if err != nil {
				return fmt.Errorf("remote: %s: upload %s: %w", c.host, p, err)
			}
			c.log.Debug("uploaded", "path", p, "bytes", len(data), "mode", posixMode(mode), "via", "sftp")
			return nil
		}
		c.log.Info("no sftp subsystem; uploading through cat", "err", err)
		c.sftpMu.Lock()
		c.noSFTP = true
		c.sftpMu.Unlock()
	}
	return c.catUpload(ctx, p, data, mode, false)
}

// UploadAsRoot is Upload through sudo: the file ends up owned by root. The
// data travels on the stdin of `sudo sh -c 'cat > tmp ...'` (after the sudo
// password, when sudo needs one).
func (c *Client) UploadAsRoot(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	if err := checkUploadPath(p); err != nil {
		return err
	}
	return c.catUpload(ctx, p, data, mode, true)
}

func checkUploadPath(p string) error {
	if p == "" || p[len(p)-1] == '/' || bytes.IndexByte([]byte(p), 0) >= 0 {
		return fmt.Errorf("remote: bad upload path %q", p)
	}
	return nil
}

var errNoSFTP = errors.New("no sftp subsystem")

func (c *Client) sftpUpload(ctx context.Context, p string, data []byte, mode fs.FileMode) (err error) {
	type res struct {
		sc  *sftp.Client
		err error
	}
	ch := make(chan res, 1)
	go func() {
		sc, err := sftp.NewClient(c.conn)
		ch <- res{sc, err}
	}()
	var sc *sftp.Client
	select {
	case r := <-ch:
		if r.err != nil {
			// Subsystem refused, or sftp-server missing (it exits at once)
			// - unless the connection itself is gone.
			if err := c.ping(ctx); err != nil {
				return fmt.Errorf("sftp: %w (connection: %w)", r.err, err)
			}
			return fmt.Errorf("%w: %w", errNoSFTP, r.err)
		}
		sc = r.sc
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.sc != nil {
				r.sc.Close()
			}
		}()
		return context.Cause(ctx)
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { sc.Close() })
	defer func() {
		if !stop() && err != nil {
			err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
		}
	}()

	tmp := path.Join(path.Dir(p), "."+path.Base(p)+".tmp-"+randHex(6))
	f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	cleanup := func() { _ = sc.Remove(tmp) }
	// Restrict before writing: the server created it with its umask.
	if err := sc.Chmod(tmp, 0o600); err != nil {
		f.Close()
		cleanup()
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		cleanup()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		cleanup()
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := sc.Chmod(tmp, mode); err != nil {
		cleanup()
		return fmt.Errorf("chmod %s %s: %w", posixMode(mode), tmp, err)
	}
	if err := sc.PosixRename(tmp, p); err != nil {
		// Without the posix-rename extension, SFTP rename refuses to
		// replace an existing file.
		_ = sc.Remove(p)
		if err2 := sc.Rename(tmp, p); err2 != nil {
			cleanup()
			return fmt.Errorf("rename %s to %s: %w", tmp, p, errors.Join(err, err2))
		}
	}
	return nil
}

// catUpload writes the file with a shell script reading stdin.
func (c *Client) catUpload(ctx context.Context, p string, data []byte, mode fs.FileMode, sudo bool) error {
	tmpl := path.Join(path.Dir(p), "."+path.Base(p)+".tmp-XXXXXX")
	script := "set -e\n" +
		"t=$(mktemp " + Quote(tmpl) + ")\n" + // created 0600
		"trap 'rm -f -- \"$t\"' EXIT\n" +
		"cat > \"$t\"\n" +
		"chmod " + posixMode(mode) + " -- \"$t\"\n" +
		"mv -f -- \"$t\" " + Quote(p) + "\n" +
		"trap - EXIT\n"
	_, err := c.Run(ctx, script, RunOpts{Stdin: bytes.NewReader(data), Sudo: sudo})
	if err != nil {
		return fmt.Errorf("remote: %s: upload %s: %w", c.host, p, err)
	}
	c.log.Debug("uploaded", "path", p, "bytes", len(data), "mode", posixMode(mode), "via", "cat", "sudo", sudo)
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ping checks that the server still answers on the connection.
func (c *Client) ping(ctx context.Context) error {
	if err := c.connLost(); err != nil {
		return err
	}
	reply := make(chan error, 1)
	go func() {
		_, _, err := c.conn.SendRequest("keepalive@openssh.com", true, nil)
		reply <- err
	}()
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%w: no answer to a keepalive in 10s", ErrConnectionLost)
	}
}
