package kubespray

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
	"golang.org/x/crypto/ssh"
)

// notes records progress.
type notes struct {
	mu    sync.Mutex
	notes []string
	done  map[string]bool
}

func (n *notes) Note(_ context.Context, m string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes = append(n.notes, m)
	return nil
}
func (n *notes) NodeStart(context.Context, string, string) error { return nil }
func (n *notes) NodeNote(context.Context, string, string) error  { return nil }
func (n *notes) NodeDone(_ context.Context, node string, _ any) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done == nil {
		n.done = map[string]bool{}
	}
	n.done[node] = true
	return nil
}
func (n *notes) NodeFailed(context.Context, string, error) error { return nil }
func (n *notes) NodeCompleted(node string) (json.RawMessage, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return nil, n.done[node]
}

type recorded struct {
	cmd, stdin string
}

// ansibleServer is an SSH server standing in for the Ansible server: it
// records each command with its stdin and answers with out and status.
func ansibleServer(t *testing.T, out string, status int, hold time.Duration) (*remotetest.Server, chan recorded) {
	got := make(chan recorded, 10)
	srv := remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"ansible": "an-pw"}, Handler: func(e *remotetest.Exec) int {
		in, _ := io.ReadAll(e.Stdin)
		got <- recorded{e.Cmd, string(in)}
		io.WriteString(e.Stdout, out)
		if hold > 0 {
			select {
			case <-e.Context.Done():
			case sig := <-e.Signals:
				_ = sig
				return 143
			case <-time.After(hold):
			}
		}
		return status
	}})
	return srv, got
}

func testSession(t *testing.T, srv *remotetest.Server) (*session, *notes) {
	t.Helper()
	m := validParams()
	host, port, _ := strings.Cut(srv.Addr, ":")
	param(m, "ansible")["ip_address"] = host
	param(m, "ansible")["port"] = port
	delete(param(m, "ansible"), "playbook_timeout")
	p, err := ParseParams(m)
	if err != nil {
		t.Fatal(err)
	}
	c, err := BuildCluster(resources(sampleVnfcs()), nil, p)
	if err != nil {
		t.Fatal(err)
	}
	n := &notes{}
	d := New(Options{Pins: &remotetest.Pins{}, Logger: slog.New(slog.DiscardHandler), AnsibleWait: 5 * time.Second})
	op := &driverapi.Op{Instance: &model.VnfInstance{ID: "5f0c9c1e-1111-4222-8333-944455556666"}, Progress: n}
	s := &session{d: d, op: op, p: p, c: c, log: d.o.Logger, inv: "/home/ansible/inventories/i-1",
		clients: map[string]*remote.Session{}, secrets: []string{"ub-pw", "an-pw"}}
	t.Cleanup(s.close)
	return s, n
}

func TestPlaybookCommand(t *testing.T) {
	srv, got := ansibleServer(t, failedRun, 2, 0)
	s, n := testSession(t, srv)
	err := s.playbook(context.Background(), "remove-node.yml", "-e", "node=workernode-dddd", "-e", "skip_confirmation=yes")
	var pe *PlaybookError
	if !errors.As(err, &pe) || pe.ExitCode != 2 || !strings.Contains(err.Error(), `host workernode-dddd failed at task "Check that kubeadm join succeeded"`) {
		t.Fatalf("error %v", err)
	}
	r := <-got
	for _, want := range []string{
		"export ANSIBLE_HOST_KEY_CHECKING=True\n",
		"export ANSIBLE_SSH_ARGS='-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=/home/ansible/inventories/i-1/known_hosts -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes'\n",
		"export ANSIBLE_NOCOLOR=1\n",
		"ansible-playbook -i \"$inv/hosts.ini\" --become --become-user=root -e \"@$vars\" \"$@\"",
		"mini-vnfm-ansible /opt/kubespray /home/ansible/inventories/i-1 remove-node.yml -e 'node=workernode-dddd' -e 'skip_confirmation=yes'",
		`trap '\''rm -rf "$cp_dir"; rm -f "$vars"'\'' EXIT`,
	} {
		if !strings.Contains(r.cmd, want) {
			t.Errorf("command lacks %q:\n%s", want, r.cmd)
		}
	}
	for _, bad := range []string{"ub-pw", "StrictHostKeyChecking=no", "known_hosts /dev/null", "ansible_password"} {
		if strings.Contains(r.cmd, bad) {
			t.Errorf("command holds %q:\n%s", bad, r.cmd)
		}
	}
	// The sudo passwords travel on stdin, into the temporary vars file.
	if !strings.Contains(r.stdin, "mini_vnfm_become_passwords:\n") || !strings.Contains(r.stdin, `  workernode-dddd: "ub-pw"`) {
		t.Errorf("stdin %q", r.stdin)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	joined := strings.Join(n.notes, "\n")
	if !strings.Contains(joined, "ansible-playbook remove-node.yml -e node=workernode-dddd -e skip_confirmation=yes") ||
		!strings.Contains(joined, "remove-node.yml: PLAY [Check the inventory]") {
		t.Errorf("progress notes %q", n.notes)
	}
}

func TestPlaybookSuccessTimeoutAndLostSession(t *testing.T) {
	ok := "PLAY [x] ***\nTASK [y] ***\nok: [h]\nPLAY RECAP ***\nh : ok=1 changed=0 unreachable=0 failed=0 skipped=0 rescued=0 ignored=0\n"
	srv, _ := ansibleServer(t, ok, 0, 0)
	s, _ := testSession(t, srv)
	if err := s.playbook(context.Background(), "facts.yml"); err != nil {
		t.Errorf("success: %v", err)
	}
	// A recap with failures fails the run even with exit status 0.
	srv, _ = ansibleServer(t, strings.Replace(ok, "failed=0", "failed=1", 1), 0, 0)
	s, _ = testSession(t, srv)
	if err := s.playbook(context.Background(), "facts.yml"); err == nil || !strings.Contains(err.Error(), "PLAY RECAP: h failed=1") {
		t.Errorf("failed recap: %v", err)
	}

	srv, _ = ansibleServer(t, "PLAY [slow] ***\nTASK [Wait forever] ***\n", 0, time.Minute)
	s, _ = testSession(t, srv)
	s.d.o.PlaybookTimeout = 500 * time.Millisecond
	t0 := time.Now()
	err := s.playbook(context.Background(), "cluster.yml")
	if err == nil || !strings.Contains(err.Error(), "timed out after 500ms (last: TASK [Wait forever])") || time.Since(t0) > 10*time.Second {
		t.Errorf("timeout after %v: %v", time.Since(t0), err)
	}

	srv, _ = ansibleServer(t, "PLAY [p] ***\n", remotetest.NoExitStatus, 0)
	s, _ = testSession(t, srv)
	if err := s.playbook(context.Background(), "scale.yml"); err == nil || !strings.Contains(err.Error(), "ended without an exit status") {
		t.Errorf("lost session: %v", err)
	}
}

func TestAnsibleServerHostKeyPinned(t *testing.T) {
	srv, _ := ansibleServer(t, "", 0, 0)
	s, _ := testSession(t, srv)
	if _, err := s.ansible(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.close()
	pins, _ := s.d.o.Pins.Get(context.Background(), ansibleServerID, "127.0.0.1")
	if len(pins) != 1 || pins[0].Fingerprint != fmt.Sprint(fingerprint(srv)) {
		t.Fatalf("pins %+v", pins)
	}
	// The same address with another key: refused before logging in.
	other := remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"ansible": "an-pw"}})
	s2, _ := testSession(t, other)
	s2.d = s.d
	_, port, _ := strings.Cut(other.Addr, ":")
	s2.p.Ansible.Port, _ = strconv.Atoi(port)
	_, err := s2.ansible(context.Background())
	var me *remote.HostKeyMismatchError
	if !errors.As(err, &me) {
		t.Fatalf("another key at the pinned address: %v", err)
	}
	if other.Logins() != 0 {
		t.Error("logged in to a server with the wrong host key")
	}
}

func fingerprint(s *remotetest.Server) string { return ssh.FingerprintSHA256(s.HostKey()) }
