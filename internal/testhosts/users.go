package testhosts

import (
	"crypto/rand"
	"crypto/sha512"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The users of a host are written straight into its /etc layer (passwd,
// shadow, group, gshadow) and its private /home and /root, with what
// useradd and chpasswd would have written: running those tools inside each
// host costs about 0.1-0.3 s per call (PAM), writing the files takes
// microseconds.

// SHA512Crypt returns the crypt(3) "$6$" hash of password (Ulrich Drepper's
// SHA-crypt with 5000 rounds), as chpasswd writes it. An empty salt means a
// random 16-character one.
func SHA512Crypt(password, salt string) string {
	const itoa64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	if salt == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = itoa64[int(b[i])%64]
		}
		salt = string(b)
	}
	if len(salt) > 16 {
		salt = salt[:16]
	}
	key, s := []byte(password), []byte(salt)
	sum := func(parts ...[]byte) []byte {
		h := sha512.New()
		for _, p := range parts {
			h.Write(p)
		}
		return h.Sum(nil)
	}
	b := sum(key, s, key)
	a := sha512.New()
	a.Write(key)
	a.Write(s)
	n := len(key)
	for ; n > 64; n -= 64 {
		a.Write(b)
	}
	a.Write(b[:n])
	for n = len(key); n > 0; n >>= 1 {
		if n&1 != 0 {
			a.Write(b)
		} else {
			a.Write(key)
		}
	}
	da := a.Sum(nil)
	dp := sha512.New()
	for range key {
		dp.Write(key)
	}
	p := repeatTo(dp.Sum(nil), len(key))
	ds := sha512.New()
	for i := 0; i < 16+int(da[0]); i++ {
		ds.Write(s)
	}
	sb := repeatTo(ds.Sum(nil), len(s))
	c := da
	for i := 0; i < 5000; i++ {
		h := sha512.New()
		if i&1 != 0 {
			h.Write(p)
		} else {
			h.Write(c)
		}
		if i%3 != 0 {
			h.Write(sb)
		}
		if i%7 != 0 {
			h.Write(p)
		}
		if i&1 != 0 {
			h.Write(c)
		} else {
			h.Write(p)
		}
		c = h.Sum(nil)
	}
	var out strings.Builder
	out.WriteString("$6$" + salt + "$")
	enc := func(b2, b1, b0 byte, n int) {
		w := uint(b2)<<16 | uint(b1)<<8 | uint(b0)
		for ; n > 0; n-- {
			out.WriteByte(itoa64[w&0x3f])
			w >>= 6
		}
	}
	for i := 0; i < 21; i++ {
		// (0,21,42), (22,43,1), (44,2,23), (3,24,45), ...
		x := [3]int{i, i + 21, i + 42}
		switch i % 3 {
		case 1:
			x = [3]int{i + 21, i + 42, i}
		case 2:
			x = [3]int{i + 42, i, i + 21}
		}
		enc(c[x[0]], c[x[1]], c[x[2]], 4)
	}
	enc(0, 0, c[63], 2)
	return out.String()
}

func repeatTo(b []byte, n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, b[:min(len(b), n-len(out))]...)
	}
	return out
}

// accountFile is one of /etc/passwd, shadow, group, gshadow as lines of
// colon-separated fields.
type accountFile struct {
	name  string
	lines [][]string
}

func readAccountFile(name string) (*accountFile, error) {
	b, err := os.ReadFile(filepath.Join("/etc", name))
	if err != nil {
		return nil, err
	}
	f := &accountFile{name: name}
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if l != "" {
			f.lines = append(f.lines, strings.Split(l, ":"))
		}
	}
	return f, nil
}

func (f *accountFile) find(name string) []string {
	for _, l := range f.lines {
		if l[0] == name {
			return l
		}
	}
	return nil
}

func (f *accountFile) bytes() []byte {
	var b strings.Builder
	for _, l := range f.lines {
		b.WriteString(strings.Join(l, ":") + "\n")
	}
	return []byte(b.String())
}

// seedUsers writes the host's accounts into its layers (called by seed).
func (h *Host) seedUsers() error {
	if len(h.spec.Users) == 0 {
		return nil
	}
	files := map[string]*accountFile{}
	for _, n := range []string{"passwd", "shadow", "group", "gshadow"} {
		f, err := readAccountFile(n)
		if err != nil {
			return err
		}
		files[n] = f
	}
	passwd, shadow, group, gshadow := files["passwd"], files["shadow"], files["group"], files["gshadow"]
	nextID := func() int {
		used := map[int]bool{}
		for _, f := range []*accountFile{passwd, group} {
			for _, l := range f.lines {
				if len(l) > 2 {
					if n, err := strconv.Atoi(l[2]); err == nil {
						used[n] = true
					}
				}
			}
		}
		for id := 1000; ; id++ {
			if !used[id] {
				return id
			}
		}
	}
	days := strconv.FormatInt(time.Now().Unix()/86400, 10)
	for _, u := range h.spec.Users {
		pw := passwd.find(u.Name)
		if pw == nil {
			id := nextID()
			shell := u.Shell
			if shell == "" {
				shell = "/bin/bash"
			}
			pw = []string{u.Name, "x", strconv.Itoa(id), strconv.Itoa(id), "", "/home/" + u.Name, shell}
			passwd.lines = append(passwd.lines, pw)
			shadow.lines = append(shadow.lines, []string{u.Name, "!", days, "0", "99999", "7", "", "", ""})
			if group.find(u.Name) == nil {
				group.lines = append(group.lines, []string{u.Name, "x", strconv.Itoa(id), ""})
				gshadow.lines = append(gshadow.lines, []string{u.Name, "!", "", ""})
			}
			if err := h.makeHome(u.Name, id, id); err != nil {
				return err
			}
		}
		sh := shadow.find(u.Name)
		if sh == nil {
			sh = []string{u.Name, "!", days, "0", "99999", "7", "", "", ""}
			shadow.lines = append(shadow.lines, sh)
		}
		switch {
		case u.Password != "":
			sh[1] = SHA512Crypt(u.Password, "")
		case u.PasswordHash != "":
			sh[1] = u.PasswordHash
		case u.Name != "root":
			sh[1] = "*" // no password, not locked: key login only
		}
		sh[2] = days
		groups := append([]string(nil), u.Groups...)
		if u.Sudo != "" && u.Name != "root" {
			groups = append(groups, "sudo")
		}
		for _, g := range groups {
			gl, gs := group.find(g), gshadow.find(g)
			if gl == nil {
				return fmt.Errorf("testhosts: user %s: no group %q", u.Name, g)
			}
			if members := splitMembers(gl[3]); !slices.Contains(members, u.Name) {
				gl[3] = strings.Join(append(members, u.Name), ",")
			}
			if gs != nil && len(gs) > 3 {
				if members := splitMembers(gs[3]); !slices.Contains(members, u.Name) {
					gs[3] = strings.Join(append(members, u.Name), ",")
				}
			}
		}
		if len(u.AuthorizedKeys) > 0 {
			uid, _ := strconv.Atoi(pw[2])
			gid, _ := strconv.Atoi(pw[3])
			home := filepath.Join(h.dir, "home", strings.TrimPrefix(pw[5], "/home/"))
			if u.Name == "root" || !strings.HasPrefix(pw[5], "/home/") {
				home = filepath.Join(h.dir, "root")
				if u.Name != "root" {
					return fmt.Errorf("testhosts: user %s: home %s is outside /home", u.Name, pw[5])
				}
			}
			if err := writeOwned(filepath.Join(home, ".ssh"), "authorized_keys", []byte(strings.Join(u.AuthorizedKeys, "\n")+"\n"), uid, gid); err != nil {
				return err
			}
		}
	}
	up := filepath.Join(h.dir, "upper")
	shadowGID := 0
	if g := group.find("shadow"); g != nil {
		shadowGID, _ = strconv.Atoi(g[2])
	}
	for _, f := range []struct {
		file *accountFile
		mode fs.FileMode
		gid  int
	}{{passwd, 0o644, 0}, {group, 0o644, 0}, {shadow, 0o640, shadowGID}, {gshadow, 0o640, shadowGID}} {
		p := "/etc/" + f.file.name
		if err := writeLayered(up, p, f.file.bytes(), f.mode); err != nil {
			return err
		}
		if err := os.Chown(filepath.Join(up, p), 0, f.gid); err != nil {
			return err
		}
	}
	return nil
}

func splitMembers(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// makeHome creates /home/<name> from /etc/skel, owned by the user.
func (h *Host) makeHome(name string, uid, gid int) error {
	home := filepath.Join(h.dir, "home", name)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	if err := os.Chown(home, uid, gid); err != nil {
		return err
	}
	ents, _ := os.ReadDir("/etc/skel")
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/etc/skel", e.Name()))
		if err != nil {
			return err
		}
		dst := filepath.Join(home, e.Name())
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
		if err := os.Chown(dst, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// writeOwned writes dir/name (dir 0700, file 0600) owned by uid:gid.
func writeOwned(dir, name string, data []byte, uid, gid int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return err
	}
	for _, x := range []string{dir, p} {
		if err := os.Chown(x, uid, gid); err != nil {
			return err
		}
	}
	return nil
}
