package osworld

import (
	"fmt"
	"path/filepath"
	"strings"
)

// keystoneConfig fills keystone.conf. Every URL Keystone could call is on
// loopback; it has no outbound clients configured at all.
type keystoneConfig struct {
	DB  string // oslo.db URL
	Dir string // holds fernet-keys/ and credential-keys/
}

func renderKeystoneConf(c keystoneConfig) string {
	return fmt.Sprintf(`# Written by internal/osworld for one test world; nothing here is a system service.
[DEFAULT]
use_stderr = true
debug = false
[database]
connection = %[1]s
max_pool_size = 4
max_overflow = 8
[token]
provider = fernet
expiration = 14400
[fernet_tokens]
key_repository = %[2]s
max_active_keys = 3
[fernet_receipts]
key_repository = %[2]s
[credential]
key_repository = %[3]s
[identity]
# bcrypt's minimum cost: this is a test cloud, and every password check costs
# a login's CPU on a 2-core machine.
password_hash_rounds = 4
[cache]
enabled = false
[oslo_policy]
policy_dirs = /etc/keystone/policy.d
[oslo_messaging_notifications]
driver = noop
`, c.DB, filepath.Join(c.Dir, "fernet-keys"), filepath.Join(c.Dir, "credential-keys"))
}

// heatConfig fills heat.conf.
type heatConfig struct {
	DB                  string
	Dir                 string
	KeystonePort        int
	HeatPort            int
	AuthKey             string // 32 characters
	ServicePassword     string // of user heat in project service
	DomainAdminPassword string // of heat_domain_admin in domain heat
	Host                string
	Region              string
	Debug               bool
}

func renderHeatConf(c heatConfig) string {
	if c.Region == "" {
		c.Region = defaultRegion
	}
	ks := fmt.Sprintf("http://127.0.0.1:%d", c.KeystonePort)
	heat := fmt.Sprintf("http://127.0.0.1:%d", c.HeatPort)
	return strings.NewReplacer(
		"@DB@", c.DB, "@KS@", ks, "@HEAT@", heat, "@HEATPORT@", fmt.Sprint(c.HeatPort), "@AUTHKEY@", c.AuthKey,
		"@SVCPW@", c.ServicePassword, "@DOMPW@", c.DomainAdminPassword, "@HOST@", c.Host, "@REGION@", c.Region,
		"@PLUGINS@", filepath.Join(c.Dir, "plugins"), "@DEBUG@", fmt.Sprint(c.Debug),
	).Replace(`# Written by internal/osworld for one test world; nothing here is a system service.
[DEFAULT]
use_stderr = true
debug = @DEBUG@
host = @HOST@
# API and engine run in one process (heat-all); oslo.messaging's in-process
# transport carries their RPC, so no message broker is needed.
transport_url = fake://
num_engine_workers = 1
auth_encryption_key = @AUTHKEY@
region_name_for_services = @REGION@
# Every URL Heat hands out or calls is on loopback.
heat_metadata_server_url = @HEAT@
heat_waitcondition_server_url = @HEAT@/v1/waitcondition
stack_user_domain_name = heat
stack_domain_admin = heat_domain_admin
stack_domain_admin_password = @DOMPW@
plugin_dirs = @PLUGINS@
environment_dir = /etc/heat/environment.d
template_dir = /etc/heat/templates
client_retry_limit = 2
[heat_all]
enabled_services = engine,api
[heat_api]
bind_host = 127.0.0.1
bind_port = @HEATPORT@
workers = 1
[database]
connection = @DB@
max_pool_size = 4
max_overflow = 16
[paste_deploy]
api_paste_config = /etc/heat/api-paste.ini
[oslo_messaging_notifications]
driver = noop
[oslo_policy]
policy_dirs = /etc/heat/policy.d
[keystone_authtoken]
auth_url = @KS@/v3
www_authenticate_uri = @KS@/v3
auth_type = password
project_name = service
project_domain_name = Default
username = heat
user_domain_name = Default
password = @SVCPW@
region_name = @REGION@
interface = public
[trustee]
auth_type = password
auth_url = @KS@/v3
username = heat
password = @SVCPW@
user_domain_name = Default
[clients]
endpoint_type = publicURL
[clients_keystone]
auth_uri = @KS@
[ec2authtoken]
auth_uri = @KS@/v3
[heat_api_cfn]
bind_host = 127.0.0.1
[healthcheck]
`)
}

// keystoneServer is the WSGI server Keystone runs in: wsgiref with a thread
// per request (Keystone's own dev server, minus the single thread), ready
// when it prints the port it bound.
const keystoneServer = `import os, sys, socketserver, wsgiref.simple_server as wss
class Server(socketserver.ThreadingMixIn, wss.WSGIServer):
    daemon_threads = True
    request_queue_size = 128
class Handler(wss.WSGIRequestHandler):
    def log_message(self, *args):
        pass
sys.argv[1:] = []
from keystone.server.wsgi import initialize_public_application
app = initialize_public_application()
srv = wss.make_server("127.0.0.1", int(os.environ["OSWORLD_KEYSTONE_PORT"]), app, server_class=Server, handler_class=Handler)
print("OSWORLD-KEYSTONE-READY", srv.server_port, flush=True)
srv.serve_forever()
`
