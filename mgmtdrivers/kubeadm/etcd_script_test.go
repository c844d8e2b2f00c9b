package kubeadm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// stubTools writes stand-ins for kubectl and etcdctl into a directory:
// etcdctl's member list leaves a mark that kubectl waits for (bounded), so
// kubectl succeeds only when it runs beside etcd's reads, not before them.
func stubTools(t *testing.T, kubectlExit, etcdExit int) (dir, marks string) {
	t.Helper()
	dir, marks = t.TempDir(), t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("kubectl", `for i in $(seq 1 100); do
	if [ -e "`+marks+`/member-list" ]; then
		echo '{"items":[{"metadata":{"name":"m1"},"spec":{},"status":{"conditions":[{"type":"Ready","status":"True"}]}}]}'
		exit `+strconv.Itoa(kubectlExit)+`
	fi
	sleep 0.05
done
echo "kubectl ran before etcd's member list" >&2
exit 9
`)
	write("etcdctl", `case "$*" in
*"member list"*) touch "`+marks+`/member-list"; [ `+strconv.Itoa(etcdExit)+` = 0 ] || { echo "etcd down" >&2; exit `+strconv.Itoa(etcdExit)+`; }
	echo '{"members":[{"ID":1,"name":"m1","peerURLs":["https://10.0.0.1:2380"],"clientURLs":["https://10.0.0.1:2379"]}]}' ;;
*"endpoint health"*) echo '[{"endpoint":"https://10.0.0.1:2379","health":true}]' ;;
*"endpoint status"*) echo '[{"Status":{"leader":1}}]' ;;
esac
`)
	return dir, marks
}

func runEtcdState(t *testing.T, dir string, withNodes string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", etcdStateScript, "etcd-state", "m1", "https://127.0.0.1:2379", withNodes, "0")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// A join's checks read the nodes beside etcd (kubectl does not wait for
// etcd's reads to end, nor they for it), and print the nodes first, then
// the marker, then etcd's member list and health; a failed kubectl fails
// the script with no marker; a failed etcd read still has the nodes.
func TestEtcdStateScriptReadsNodesBesideEtcd(t *testing.T) {
	dir, _ := stubTools(t, 0, 0)
	out, rc := runEtcdState(t, dir, "1")
	if rc != 0 {
		t.Fatalf("exit %d:\n%s", rc, out)
	}
	nodesOut, rest, ok := strings.Cut(out, nodesEndMark+"\n")
	if !ok {
		t.Fatalf("no nodes marker:\n%s", out)
	}
	nodes, err := parseNodes(nodesOut)
	if err != nil || !nodes["m1"].Ready {
		t.Fatalf("nodes %v, %v from %q", nodes, err, nodesOut)
	}
	if !strings.HasPrefix(rest, `{"members"`) || !strings.Contains(rest, etcdHealthMark+"\n[") || strings.Contains(rest, etcdStatusMark) {
		t.Fatalf("etcd part:\n%s", rest)
	}

	dir, _ = stubTools(t, 3, 0)
	if out, rc := runEtcdState(t, dir, "1"); rc != 3 || strings.Contains(out, nodesEndMark) {
		t.Fatalf("kubectl failed: exit %d, want 3, and no marker:\n%s", rc, out)
	}
	dir, _ = stubTools(t, 0, 4)
	out, rc = runEtcdState(t, dir, "1")
	if rc != 4 || !strings.Contains(out, nodesEndMark) {
		t.Fatalf("etcd failed: exit %d, want 4, with the nodes and the marker:\n%s", rc, out)
	}
	// Without the nodes: etcd alone.
	dir, _ = stubTools(t, 0, 0)
	if out, rc := runEtcdState(t, dir, "0"); rc != 0 || strings.Contains(out, nodesEndMark) || !strings.HasPrefix(out, `{"members"`) {
		t.Fatalf("exit %d:\n%s", rc, out)
	}
}
