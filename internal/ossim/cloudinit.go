package ossim

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// cloudConfig is what the simulator takes from a server's user_data: the
// parts of cloud-init that matter for reaching and preparing a test host.
type cloudConfig struct {
	users      []testhosts.User
	pwauth     *bool
	hostname   string
	bootcmd    []string
	runcmd     []string
	writeFiles []writeFile
	scripts    []string
	warnings   []string
}

type writeFile struct {
	path, owner, perms string
	content            []byte
	append             bool
}

// decodeUserData undoes the base64 Nova requires on the API (Heat passes the
// template's text; both are accepted).
func decodeUserData(s string) string {
	t := strings.TrimSpace(s)
	if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "Content-Type") {
		return s
	}
	if b, err := base64.StdEncoding.DecodeString(t); err == nil {
		return string(b)
	}
	return s
}

// parseUserData reads cloud-init user data: "#cloud-config" YAML, a "#!"
// script, or a MIME multipart of those. Without any "users" the image's
// default user (defUser with defPass and passwordless sudo) exists.
func parseUserData(raw, defUser, defPass string) *cloudConfig {
	cc := &cloudConfig{}
	var configs []map[string]any
	var collect func(body string, ctype string)
	collect = func(body, ctype string) {
		t := strings.TrimLeft(body, " \t\r\n")
		switch {
		case strings.HasPrefix(ctype, "multipart/"), strings.HasPrefix(t, "Content-Type: multipart/"), strings.HasPrefix(t, "MIME-Version"):
			msg, err := mail.ReadMessage(strings.NewReader(t))
			if err != nil {
				cc.warnings = append(cc.warnings, "user_data: bad MIME message: "+err.Error())
				return
			}
			_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
			if err != nil || params["boundary"] == "" {
				cc.warnings = append(cc.warnings, "user_data: MIME message without boundary")
				return
			}
			mr := multipart.NewReader(msg.Body, params["boundary"])
			for {
				part, err := mr.NextPart()
				if err != nil {
					break
				}
				b, _ := io.ReadAll(part)
				if part.Header.Get("Content-Transfer-Encoding") == "base64" {
					if d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); err == nil {
						b = d
					}
				}
				pt, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
				collect(string(b), pt)
			}
		case ctype == "text/cloud-config" || strings.HasPrefix(t, "#cloud-config"):
			var m map[string]any
			if err := yaml.Unmarshal([]byte(t), &m); err != nil {
				cc.warnings = append(cc.warnings, "user_data: invalid cloud-config: "+err.Error())
				return
			}
			configs = append(configs, m)
		case ctype == "text/x-shellscript" || strings.HasPrefix(t, "#!"):
			cc.scripts = append(cc.scripts, body)
		}
	}
	collect(raw, "")

	existingGroups := systemGroups()
	type acct struct {
		u      testhosts.User
		locked bool
	}
	var accts []*acct
	byName := map[string]*acct{}
	add := func(a *acct) {
		if old := byName[a.u.Name]; old != nil {
			*old = *a
			return
		}
		accts = append(accts, a)
		byName[a.u.Name] = a
	}
	defaultUser := func() *acct {
		return &acct{u: testhosts.User{Name: defUser, Sudo: testhosts.SudoNoPasswd, Groups: filterGroups([]string{"adm", "sudo"}, existingGroups)}}
	}
	sawUsers := false
	defaultPassSet := false
	for _, m := range configs {
		if v, ok := m["users"]; ok {
			sawUsers = true
			list, _ := v.([]any)
			for _, it := range list {
				switch u := it.(type) {
				case string:
					if u == "default" {
						add(defaultUser())
					}
				case map[string]any:
					name, _ := u["name"].(string)
					if name == "" {
						continue
					}
					a := &acct{u: testhosts.User{Name: name, Shell: str(u, "shell")}, locked: true}
					if l, ok := u["lock_passwd"].(bool); ok {
						a.locked = l
					}
					if p := str(u, "plain_text_passwd"); p != "" {
						a.u.Password, a.locked = p, false
					}
					for _, k := range []string{"hashed_passwd", "passwd"} {
						if h := str(u, k); h != "" {
							a.u.PasswordHash, a.locked = h, false
						}
					}
					switch sv := u["sudo"].(type) {
					case string:
						a.u.Sudo = sv
					case []any:
						if len(sv) > 0 {
							a.u.Sudo = fmt.Sprint(sv[0])
						}
					}
					a.u.Groups = filterGroups(splitGroups(u["groups"]), existingGroups)
					a.u.AuthorizedKeys = stringList(u["ssh_authorized_keys"])
					add(a)
				}
			}
		}
	}
	if !sawUsers {
		add(defaultUser())
	}
	setPass := func(name, pass string) {
		a := byName[name]
		if a == nil && name == "root" {
			a = &acct{u: testhosts.User{Name: "root"}}
			add(a)
		}
		if a == nil {
			cc.warnings = append(cc.warnings, "chpasswd: no user "+name)
			return
		}
		if strings.HasPrefix(pass, "$") {
			a.u.PasswordHash, a.u.Password = pass, ""
		} else {
			a.u.Password, a.u.PasswordHash = pass, ""
		}
		a.locked = false
		if name == defUser {
			defaultPassSet = true
		}
	}
	for _, m := range configs {
		if p := str(m, "password"); p != "" && byName[defUser] != nil {
			setPass(defUser, p)
		}
		if cp, ok := m["chpasswd"].(map[string]any); ok {
			switch l := cp["list"].(type) {
			case string:
				for _, line := range strings.Split(l, "\n") {
					if u, p, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
						setPass(u, p)
					}
				}
			case []any:
				for _, it := range l {
					if u, p, ok := strings.Cut(fmt.Sprint(it), ":"); ok {
						setPass(u, p)
					}
				}
			}
			for _, u := range listOfMaps(cp["users"]) {
				p := str(u, "password")
				if str(u, "type") == "RANDOM" || p == "RANDOM" {
					p = randomHex(8)
				}
				setPass(str(u, "name"), p)
			}
		}
		if keys := stringList(m["ssh_authorized_keys"]); len(keys) > 0 {
			if a := byName[defUser]; a != nil {
				a.u.AuthorizedKeys = append(a.u.AuthorizedKeys, keys...)
			}
		}
		switch v := m["ssh_pwauth"].(type) {
		case bool:
			cc.pwauth = &v
		case string:
			b := v == "yes" || v == "true" || v == "True"
			if v != "unchanged" {
				cc.pwauth = &b
			}
		}
		if h := str(m, "hostname"); h != "" {
			cc.hostname = h
		}
		cc.bootcmd = append(cc.bootcmd, commandList(m["bootcmd"])...)
		cc.runcmd = append(cc.runcmd, commandList(m["runcmd"])...)
		for _, wf := range listOfMaps(m["write_files"]) {
			f := writeFile{path: str(wf, "path"), owner: str(wf, "owner"), perms: fmt.Sprint(orDefault(wf["permissions"], "0644"))}
			f.append, _ = wf["append"].(bool)
			content := str(wf, "content")
			switch str(wf, "encoding") {
			case "b64", "base64":
				b, err := base64.StdEncoding.DecodeString(content)
				if err != nil {
					cc.warnings = append(cc.warnings, "write_files "+f.path+": bad base64")
					continue
				}
				f.content = b
			default:
				f.content = []byte(content)
			}
			if f.path != "" {
				cc.writeFiles = append(cc.writeFiles, f)
			}
		}
	}
	// The simulator's image lets its default user log in with a password.
	if a := byName[defUser]; a != nil && !defaultPassSet && a.u.Password == "" && a.u.PasswordHash == "" {
		a.u.Password = defPass
	}
	for _, a := range accts {
		cc.users = append(cc.users, a.u)
	}
	return cc
}

func splitGroups(v any) []string {
	switch g := v.(type) {
	case string:
		var out []string
		for _, x := range strings.Split(g, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	default:
		return stringList(v)
	}
}

func filterGroups(gs []string, existing map[string]bool) []string {
	var out []string
	for _, g := range gs {
		if existing[g] {
			out = append(out, g)
		}
	}
	return out
}

func systemGroups() map[string]bool {
	out := map[string]bool{}
	b, err := os.ReadFile("/etc/group")
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if name, _, ok := strings.Cut(sc.Text(), ":"); ok {
			out[name] = true
		}
	}
	return out
}

// commandList turns runcmd/bootcmd entries (strings or argv lists) into
// shell command lines.
func commandList(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, it := range l {
		switch c := it.(type) {
		case string:
			out = append(out, c)
		case []any:
			var parts []string
			for _, a := range c {
				parts = append(parts, "'"+strings.ReplaceAll(fmt.Sprint(a), "'", `'\''`)+"'")
			}
			out = append(out, strings.Join(parts, " "))
		}
	}
	return out
}
