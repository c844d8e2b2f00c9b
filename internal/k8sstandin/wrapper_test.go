package k8sstandin

import (
	"slices"
	"strings"
	"testing"
)

func TestWithIgnoredPreflight(t *testing.T) {
	for _, tc := range []struct {
		in        []string
		keep      []string
		extraSkip []string
	}{
		{in: []string{"init", "--node-name", "m1"}, keep: []string{"init", "--node-name", "m1"}},
		{in: []string{"join", "10.0.0.1:6443", "--ignore-preflight-errors", "Port-6443", "--token", "x"},
			keep: []string{"join", "10.0.0.1:6443", "--token", "x"}, extraSkip: []string{"Port-6443"}},
		{in: []string{"join", "--ignore-preflight-errors=A,B"}, keep: []string{"join"}, extraSkip: []string{"A", "B"}},
	} {
		out := withIgnoredPreflight(tc.in)
		if !slices.Equal(out[:len(out)-1], tc.keep) {
			t.Errorf("%v: kept %v, want %v", tc.in, out[:len(out)-1], tc.keep)
		}
		last := out[len(out)-1]
		list, ok := strings.CutPrefix(last, "--ignore-preflight-errors=")
		if !ok {
			t.Fatalf("%v: last argument %q", tc.in, last)
		}
		got := strings.Split(list, ",")
		for _, want := range append([]string{"CRI", "ImagePull", "Swap"}, tc.extraSkip...) {
			if !slices.Contains(got, want) {
				t.Errorf("%v: ignored %v lacks %s", tc.in, got, want)
			}
		}
		for _, real := range []string{"Port-6443", "FileAvailable--etc-kubernetes-kubelet.conf", "all"} {
			if slices.Contains(got, real) && !slices.Contains(tc.extraSkip, real) {
				t.Errorf("%v: the wrapper ignores the real check %s", tc.in, real)
			}
		}
	}
}

func TestEtcd34Flags(t *testing.T) {
	in := []string{"--name=m1", "--feature-gates=InitialCorruptCheck=true", "--watch-progress-notify-interval=5s", "--snapshot-count=10000"}
	want := []string{"--name=m1", "--experimental-initial-corrupt-check=true", "--experimental-watch-progress-notify-interval=5s", "--snapshot-count=10000"}
	if got := etcd34Flags(in); !slices.Equal(got, want) {
		t.Errorf("etcd34Flags:\n got %v\nwant %v", got, want)
	}
}

func TestWithFeatureGates(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"--a=1"}, []string{"--a=1", "--feature-gates=WatchList=false"}},
		{[]string{"--feature-gates=Foo=true,WatchList=true", "--a=1"}, []string{"--a=1", "--feature-gates=Foo=true,WatchList=false"}},
	} {
		if got := withFeatureGates(c.in, "WatchList=false"); !slices.Equal(got, c.want) {
			t.Errorf("withFeatureGates(%v):\n got %v\nwant %v", c.in, got, c.want)
		}
	}
}

// The warnings of the checks the wrapper ignores on its own are dropped
// (a host with a container runtime prints none); the caller's stay, and so
// does everything else, an unterminated last line included.
func TestWarningFilter(t *testing.T) {
	var out strings.Builder
	f := newWarningFilter(&out, []string{"join", "--ignore-preflight-errors=Swap"})
	in := "[preflight] Running pre-flight checks\n" +
		"\t[WARNING CRI]: could not connect to the container runtime: dial unix /var/run/containerd/containerd.sock\n" +
		"\t[WARNING Swap]: swap is supported for cgroup v2 only\n" +
		"\t[WARNING FileExisting-crictl]: crictl not found in system path\n" +
		"\t[WARNING Hostname]: hostname could not be reached\n" +
		"error execution phase preflight: [preflight] Some fatal errors occurred:\n" +
		"\t[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]: /etc/kubernetes/pki/ca.crt already exists"
	for _, chunk := range []string{in[:30], in[30:100], in[100:]} { // writes split mid-line
		if _, err := f.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	f.Flush()
	want := "[preflight] Running pre-flight checks\n" +
		"\t[WARNING Swap]: swap is supported for cgroup v2 only\n" +
		"\t[WARNING Hostname]: hostname could not be reached\n" +
		"error execution phase preflight: [preflight] Some fatal errors occurred:\n" +
		"\t[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]: /etc/kubernetes/pki/ca.crt already exists"
	if out.String() != want {
		t.Errorf("filtered:\n%s\nwant:\n%s", out.String(), want)
	}
}
