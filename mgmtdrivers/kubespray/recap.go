package kubespray

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// HostRecap is one host's line of an ansible-playbook PLAY RECAP.
type HostRecap struct {
	Host                                                        string
	OK, Changed, Unreachable, Failed, Skipped, Rescued, Ignored int
}

// TaskFailure is a task that failed (or could not reach its host).
type TaskFailure struct {
	Host        string
	Task        string
	Play        string
	Unreachable bool
	Message     string
}

// Run is what one ansible-playbook run reported, read line by line from its
// output (Feed), so that nothing depends on keeping the whole output.
type Run struct {
	Playbook string
	Recap    []HostRecap
	Failures []TaskFailure
	// Errors are "ERROR! ..." lines (inventory, syntax, missing files).
	Errors []string

	play, task string
	inRecap    bool
	pending    *TaskFailure // a failure that an "...ignoring" line may cancel
}

var (
	playRE  = regexp.MustCompile(`^PLAY \[(.*)\] \**\s*$`)
	taskRE  = regexp.MustCompile(`^(?:TASK|RUNNING HANDLER) \[(.*)\] \**\s*$`)
	recapRE = regexp.MustCompile(`^PLAY RECAP \**\s*$`)
	// fatal: [host]: FAILED! => {...}; fatal: [host -> deleg]: UNREACHABLE! => {...};
	// failed: [host] (item=x) => {...}
	failRE     = regexp.MustCompile(`^(fatal|failed): \[([^\]]+)\](?:: (FAILED|UNREACHABLE)!)?(?: \(item=.*\))? => (.*)$`)
	hostStatRE = regexp.MustCompile(`^(\S+)\s+:\s+(.*)$`)
	statRE     = regexp.MustCompile(`(\w+)=(\d+)`)
)

// Feed reads one line of output.
func (r *Run) Feed(line string) {
	line = strings.TrimRight(line, "\r")
	switch {
	case recapRE.MatchString(line):
		r.flush()
		r.inRecap = true
		return
	case playRE.MatchString(line):
		r.flush()
		r.play, r.task, r.inRecap = playRE.FindStringSubmatch(line)[1], "", false
		return
	case taskRE.MatchString(line):
		r.flush()
		r.task = taskRE.FindStringSubmatch(line)[1]
		return
	case strings.HasPrefix(line, "...ignoring"):
		r.pending = nil
		return
	case strings.HasPrefix(line, "ERROR! "):
		r.flush()
		r.Errors = append(r.Errors, strings.TrimPrefix(line, "ERROR! "))
		return
	}
	if m := failRE.FindStringSubmatch(line); m != nil {
		r.flush()
		host := m[2]
		if i := strings.Index(host, " -> "); i >= 0 {
			host = host[:i]
		}
		r.pending = &TaskFailure{Host: host, Task: r.task, Play: r.play, Unreachable: m[3] == "UNREACHABLE", Message: resultMessage(m[4])}
		return
	}
	if r.inRecap {
		if m := hostStatRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			h := HostRecap{Host: m[1]}
			for _, kv := range statRE.FindAllStringSubmatch(m[2], -1) {
				n, _ := strconv.Atoi(kv[2])
				switch kv[1] {
				case "ok":
					h.OK = n
				case "changed":
					h.Changed = n
				case "unreachable":
					h.Unreachable = n
				case "failed":
					h.Failed = n
				case "skipped":
					h.Skipped = n
				case "rescued":
					h.Rescued = n
				case "ignored":
					h.Ignored = n
				}
			}
			r.Recap = append(r.Recap, h)
		}
	}
}

func (r *Run) flush() {
	if r.pending != nil {
		r.Failures = append(r.Failures, *r.pending)
		r.pending = nil
	}
}

// Done ends the output.
func (r *Run) Done() { r.flush() }

// resultMessage extracts a readable message from a task result (the JSON
// after "=>"), bounded.
func resultMessage(raw string) string {
	var res map[string]any
	msg := ""
	if err := json.Unmarshal([]byte(raw), &res); err == nil {
		s := func(k string) string { v, _ := res[k].(string); return strings.TrimSpace(v) }
		msg = s("msg")
		if e := s("stderr"); e != "" && !strings.Contains(msg, e) {
			msg = strings.TrimSpace(msg + " " + e)
		}
		if msg == "" {
			msg = s("module_stderr")
		}
		if rc, ok := res["rc"].(float64); ok && !strings.Contains(msg, "rc ") {
			msg = strings.TrimSpace(fmt.Sprintf("%s (rc %d)", msg, int(rc)))
		}
		if res["censored"] != nil && msg == "" {
			msg, _ = res["censored"].(string)
		}
	} else if m := regexp.MustCompile(`"msg": "((?:[^"\\]|\\.)*)`).FindStringSubmatch(raw); m != nil {
		msg = m[1] // a truncated line
	} else {
		msg = raw
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return msg
}

// FailedHosts are the hosts the recap counts as failed or unreachable.
func (r *Run) FailedHosts() []string {
	var out []string
	for _, h := range r.Recap {
		if h.Failed > 0 || h.Unreachable > 0 {
			out = append(out, h.Host)
		}
	}
	return out
}

// Failed tells whether the run failed by its recap or its errors.
func (r *Run) Failed() bool { return len(r.FailedHosts()) > 0 || len(r.Errors) > 0 }

// Error describes a failed run: each failed host with its failed task and
// message, then the recap counts; exitCode is ansible-playbook's status.
func (r *Run) Error(exitCode int) error {
	var parts []string
	seen := map[string]bool{}
	for _, f := range r.Failures {
		what := "failed"
		if f.Unreachable {
			what = "unreachable"
		}
		s := fmt.Sprintf("host %s %s at task %q", f.Host, what, f.Task)
		if f.Message != "" {
			s += ": " + f.Message
		}
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	for _, e := range r.Errors {
		parts = append(parts, "ERROR! "+e)
	}
	var recap []string
	for _, h := range r.Recap {
		if h.Failed > 0 || h.Unreachable > 0 {
			recap = append(recap, fmt.Sprintf("%s failed=%d unreachable=%d", h.Host, h.Failed, h.Unreachable))
		}
	}
	msg := fmt.Sprintf("ansible-playbook %s failed (exit status %d)", r.Playbook, exitCode)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	if len(recap) > 0 {
		msg += "; PLAY RECAP: " + strings.Join(recap, ", ")
	} else if len(r.Recap) == 0 && len(r.Errors) == 0 {
		msg += "; no PLAY RECAP (see the operation log for the output)"
	}
	return &PlaybookError{Playbook: r.Playbook, ExitCode: exitCode, FailedHosts: slices.Clone(r.FailedHosts()),
		Failures: slices.Clone(r.Failures), msg: msg}
}

// PlaybookError is a failed ansible-playbook run.
type PlaybookError struct {
	Playbook    string
	ExitCode    int
	FailedHosts []string
	Failures    []TaskFailure
	msg         string
}

func (e *PlaybookError) Error() string { return e.msg }
