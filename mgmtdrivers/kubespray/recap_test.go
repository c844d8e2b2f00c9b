package kubespray

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// A failed cluster.yml as ansible-core 2.14's default callback prints it.
const failedRun = `
PLAY [Check the inventory] *****************************************************

TASK [Check the groups] ********************************************************
ok: [localhost]

PLAY [Prepare the nodes] *******************************************************

TASK [Check that the Kubernetes binaries are installed] ************************
ok: [masternode-aaaa]
ok: [workernode-dddd]

TASK [Create the cache directory] **********************************************
fatal: [masternode-aaaa]: FAILED! => {"changed": false, "msg": "permission denied"}
...ignoring

PLAY [Join the worker nodes] ***************************************************

TASK [Run kubeadm join] ********************************************************
fatal: [workernode-eeee]: FAILED! => {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified for this result", "changed": true}

TASK [Check that kubeadm join succeeded] ***************************************
fatal: [workernode-dddd]: FAILED! => {"changed": false, "msg": "kubeadm join failed (rc 1): error execution phase preflight: [preflight] Some fatal errors occurred:\n\t[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]: /etc/kubernetes/pki/ca.crt already exists"}

TASK [kubernetes/preinstall : Update package cache] ****************************
failed: [workernode-eeee] (item=curl) => {"ansible_loop_var": "item", "changed": false, "item": "curl", "msg": "No package matching 'curl'", "rc": 100}
fatal: [workernode-ffff -> masternode-aaaa(10.77.0.3)]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: Host key verification failed.", "unreachable": true}

PLAY RECAP *********************************************************************
localhost                  : ok=1    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0
masternode-aaaa            : ok=6    changed=2    unreachable=0    failed=0    skipped=5    rescued=0    ignored=1
workernode-dddd            : ok=5    changed=1    unreachable=0    failed=1    skipped=3    rescued=0    ignored=0
workernode-eeee            : ok=5    changed=1    unreachable=0    failed=1    skipped=3    rescued=0    ignored=0
workernode-ffff            : ok=0    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0

`

func feed(out string) *Run {
	r := &Run{Playbook: "cluster.yml"}
	for _, l := range strings.Split(out, "\n") {
		r.Feed(l)
	}
	r.Done()
	return r
}

func TestRecapFailure(t *testing.T) {
	r := feed(failedRun)
	if !r.Failed() {
		t.Fatal("not failed")
	}
	if got := r.FailedHosts(); !slices.Equal(got, []string{"workernode-dddd", "workernode-eeee", "workernode-ffff"}) {
		t.Errorf("failed hosts %v", got)
	}
	if len(r.Recap) != 5 || r.Recap[1].Ignored != 1 || r.Recap[1].OK != 6 || r.Recap[4].Unreachable != 1 {
		t.Errorf("recap %+v", r.Recap)
	}
	if len(r.Failures) != 4 {
		t.Fatalf("failures %+v (the ignored one must not count)", r.Failures)
	}
	f := r.Failures[1]
	if f.Host != "workernode-dddd" || f.Task != "Check that kubeadm join succeeded" || f.Play != "Join the worker nodes" ||
		!strings.Contains(f.Message, "[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]") {
		t.Errorf("failure %+v", f)
	}
	if f := r.Failures[2]; f.Task != "kubernetes/preinstall : Update package cache" || f.Message != "No package matching 'curl' (rc 100)" {
		t.Errorf("loop failure %+v", f)
	}
	if f := r.Failures[3]; f.Host != "workernode-ffff" || !f.Unreachable || !strings.Contains(f.Message, "Host key verification failed") {
		t.Errorf("unreachable %+v", f)
	}
	err := r.Error(2)
	var pe *PlaybookError
	if !errors.As(err, &pe) || pe.ExitCode != 2 || len(pe.FailedHosts) != 3 {
		t.Fatalf("error %#v", err)
	}
	for _, want := range []string{
		"ansible-playbook cluster.yml failed (exit status 2)",
		`host workernode-dddd failed at task "Check that kubeadm join succeeded": kubeadm join failed (rc 1)`,
		`host workernode-eeee failed at task "Run kubeadm join": the output has been hidden`,
		`host workernode-ffff unreachable at task "kubernetes/preinstall : Update package cache"`,
		"PLAY RECAP: workernode-dddd failed=1 unreachable=0, workernode-eeee failed=1 unreachable=0, workernode-ffff failed=0 unreachable=1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%s\nlacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "permission denied") {
		t.Errorf("an ignored failure is reported: %v", err)
	}
}

func TestRecapSuccessAndErrors(t *testing.T) {
	r := feed(`PLAY [x] ***
TASK [y] ***
ok: [h1]
PLAY RECAP ***
h1                         : ok=1    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0
`)
	if r.Failed() || len(r.Recap) != 1 || r.Recap[0].Host != "h1" {
		t.Errorf("success run %+v", r)
	}
	r = feed("ERROR! the playbook: cluster.yml could not be found\n")
	if !r.Failed() || !strings.Contains(r.Error(1).Error(), "ERROR! the playbook: cluster.yml could not be found") {
		t.Errorf("error run %v", r.Error(1))
	}
	r = feed("Killed\n")
	if err := r.Error(137).Error(); !strings.Contains(err, "exit status 137") || !strings.Contains(err, "no PLAY RECAP") {
		t.Errorf("no recap: %s", err)
	}
	// A result line cut by the output's line bound still names its message.
	r = feed("TASK [t] ***\nfatal: [h]: FAILED! => {\"changed\": false, \"msg\": \"something broke and the line is cut" + "\n")
	if len(r.Failures) != 1 || r.Failures[0].Message != "something broke and the line is cut" {
		t.Errorf("truncated %+v", r.Failures)
	}
}
