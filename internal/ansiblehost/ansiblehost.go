// Package ansiblehost makes a host (internal/testhosts) into the Ansible
// server the kubespray management driver drives: Debian's ansible and sshpass
// come from the machine's /usr, the kubespray tree is our stand-in (the
// kubespray/ directory here: real playbooks with kubespray's entry points and
// variables that build clusters of the Kubernetes stand-in, see its README).
// The embedded cloud of `make run` boots one (internal/simcloud) and the
// kubespray end-to-end tests build their own.
package ansiblehost

import (
	"archive/tar"
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

//go:embed kubespray
var tree embed.FS

// Defaults of an Ansible server's layout, the values of the kubespray
// driver's ansible.kubespray_root_path and ansible.transferring_inventory_path.
const (
	KubesprayRoot = "/opt/kubespray"
	User          = "ansible"
	Inventories   = "/home/" + User + "/inventories"
)

// Tree is the stand-in kubespray tree.
func Tree() fs.FS {
	sub, err := fs.Sub(tree, "kubespray")
	if err != nil {
		panic(err)
	}
	return sub
}

// Tar packs the stand-in kubespray tree (owner root, files 0644, dirs 0755).
func Tar() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := fs.WalkDir(Tree(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		h := &tar.Header{Name: p, Mode: 0o644, Uname: "root", Gname: "root", Typeflag: tar.TypeReg}
		if d.IsDir() {
			h.Name, h.Mode, h.Typeflag = p+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		b, err := fs.ReadFile(Tree(), p)
		if err != nil {
			return err
		}
		h.Size = int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	return buf.Bytes(), err
}

// InstallKubespray puts the stand-in tree at root in the host, as a tar
// stream (a checkout under /tmp, /home or /root is invisible in a host).
func InstallKubespray(ctx context.Context, h *testhosts.Host, root string) error {
	b, err := Tar()
	if err != nil {
		return err
	}
	cmd := h.Command(ctx, "sh", "-c", `set -e; mkdir -p "$1"; tar -x --no-same-owner -C "$1"`, "sh", root)
	cmd.Stdin = bytes.NewReader(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ansiblehost: copying the kubespray stand-in into %s: %v: %s", h.Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Setup makes h an Ansible server: the kubespray tree at KubesprayRoot and
// the inventories directory of user (an existing account). It checks that the
// host can run ansible-playbook, ssh and sshpass, and is idempotent.
func Setup(ctx context.Context, h *testhosts.Host, user string) error {
	if err := InstallKubespray(ctx, h, KubesprayRoot); err != nil {
		return err
	}
	inv := "/home/" + user + "/inventories"
	if out, err := h.Exec(ctx, "sh", "-c", `set -e; install -d -o "$1" -m 700 "/home/$1/.ssh" "$2"`, "sh", user, inv); err != nil {
		return fmt.Errorf("ansiblehost: %v: %s", err, out)
	}
	out, err := h.Exec(ctx, "sh", "-c", `for p in ansible-playbook ssh sshpass; do command -v $p >/dev/null || echo $p; done`)
	if err != nil {
		return err
	}
	if missing := strings.Fields(out); len(missing) > 0 {
		return fmt.Errorf("ansiblehost: the Ansible server %s lacks %s (Debian packages ansible, openssh-client, sshpass on this machine: the hosts use its /usr)",
			h.Name, strings.Join(missing, ", "))
	}
	return nil
}
