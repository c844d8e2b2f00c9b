package kubespray

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// playbookScript runs ansible-playbook on the Ansible server:
//   - in the kubespray root (its ansible.cfg applies);
//   - with the sudo passwords of the nodes in a temporary extra-vars file
//     (mode 0600, from stdin) that is removed however the run ends;
//   - with its own SSH ControlPath directory, so that no multiplexed
//     connection to a replaced VM (same address, new host key) is reused.
//
// $1 kubespray root, $2 inventory directory, $3... ansible-playbook arguments.
const playbookScript = `set -e
umask 077
root=$1 inv=$2
shift 2
cp_dir=$(mktemp -d /tmp/mini-vnfm-cp.XXXXXX)
vars=$(mktemp "$inv/.become.XXXXXX")
trap 'rm -rf "$cp_dir"; rm -f "$vars"' EXIT
trap 'exit 143' HUP INT TERM
cat > "$vars"
cd "$root"
ANSIBLE_SSH_CONTROL_PATH_DIR=$cp_dir ansible-playbook -i "$inv/hosts.ini" --become --become-user=root -e "@$vars" "$@"
`

// playbookTimeout bounds one run: the parameter, else the driver's option,
// else 20 minutes plus 5 per node.
func (s *session) playbookTimeout() time.Duration {
	if t := s.p.Ansible.PlaybookTimeout; t > 0 {
		return t
	}
	if t := s.d.o.PlaybookTimeout; t > 0 {
		return t
	}
	n := 0
	if s.c != nil {
		n = len(s.c.All())
	}
	return 20*time.Minute + time.Duration(n)*5*time.Minute
}

// playbook runs a kubespray playbook against the cluster's inventory, with
// host key checking on (against the inventory's known_hosts only), output
// streamed into the operation log and progress, and a timeout. A failed
// run is reported from its PLAY RECAP and failed tasks (*PlaybookError).
func (s *session) playbook(ctx context.Context, playbook string, args ...string) error {
	c, err := s.ansible(ctx)
	if err != nil {
		return err
	}
	inv := &Inventory{Dir: s.inv}
	env := map[string]string{
		// The real kubespray's ansible.cfg turns host key checking off and
		// sends known_hosts to /dev/null: the environment wins over it.
		"ANSIBLE_HOST_KEY_CHECKING":   "True",
		"ANSIBLE_SSH_ARGS":            "-o ControlMaster=auto -o ControlPersist=60s " + inv.sshArgs(),
		"ANSIBLE_NOCOLOR":             "1",
		"ANSIBLE_FORCE_COLOR":         "0",
		"ANSIBLE_STDOUT_CALLBACK":     "default",
		"ANSIBLE_RETRY_FILES_ENABLED": "False",
	}
	run := &Run{Playbook: playbook}
	var (
		mu       sync.Mutex
		lastNote time.Time
		lastTask string
	)
	timeout := s.playbookTimeout()
	cmd := remote.Command("sh", append([]string{"-c", playbookScript, "mini-vnfm-ansible", s.p.Ansible.KubesprayRootPath, s.inv, playbook}, args...)...)
	s.note(ctx, "ansible-playbook "+strings.Join(append([]string{playbook}, args...), " "))
	start := time.Now()
	_, err = c.Run(ctx, cmd, remote.RunOpts{
		Env:     env,
		Stdin:   strings.NewReader(s.becomeVars()),
		Timeout: timeout,
		Output: func(st remote.Stream, line string) {
			s.log.Info("ansible", "playbook", playbook, "stream", st.String(), "line", line)
			mu.Lock()
			defer mu.Unlock()
			run.Feed(line)
			if strings.HasPrefix(line, "TASK [") || strings.HasPrefix(line, "PLAY [") {
				lastTask = strings.TrimRight(line, " *")
				if time.Since(lastNote) >= time.Second {
					lastNote = time.Now()
					s.note(ctx, playbook+": "+lastTask)
				}
			}
		},
	})
	mu.Lock()
	defer mu.Unlock()
	run.Done()
	if err == nil && !run.Failed() {
		s.log.Info("playbook done", "playbook", playbook, "duration", time.Since(start).Round(time.Millisecond))
		s.note(ctx, playbook+": done")
		return nil
	}
	if errors.Is(err, remote.ErrTimeout) {
		return fmt.Errorf("kubespray: ansible-playbook %s timed out after %v (last: %s); raise ansible.playbook_timeout if the cluster needs longer", playbook, timeout, lastTask)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	code, ok := remote.ExitCode(err)
	if !ok && err != nil {
		return fmt.Errorf("kubespray: ansible-playbook %s on the Ansible server %s ended without an exit status (last: %s): the SSH connection or the server's sshd went away, and the playbook may have stopped half-way; check the server, then retry the operation: %w",
			playbook, s.p.Ansible.IPAddress, lastTask, err)
	}
	if len(run.Recap) == 0 && len(run.Errors) == 0 && len(run.Failures) == 0 {
		// Not even a play ran: say what the server said.
		var ce *remote.CommandError
		if errors.As(err, &ce) {
			return fmt.Errorf("kubespray: %w: %s", run.Error(code), lastLines(ce.StderrTail+"\n"+ce.StdoutTail, 5))
		}
	}
	return fmt.Errorf("kubespray: %w", run.Error(code))
}

func lastLines(s string, n int) string {
	var ls []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}
