// Package osworld runs real OpenStack control services — Debian's Keystone 22
// and Heat 19.0.0 (OpenStack Zed) — on this machine for tests and for
// `make run` with VNFM_SIMULATOR_HEAT=real, with our simulator (internal/ossim)
// serving only what Heat calls behind the catalog: Nova, Neutron and Glance
// (Octavia and Cinder have catalog entries but are not served yet). The
// VNFM, gophercloud and Heat's own python clients talk to the real Keystone
// and the real Heat; Heat's resource plugins drive the simulator's compute,
// network and image APIs, whose servers can be real SSH hosts. What real
// Heat showed and how it was fixed: docs/test-worlds.md.
//
// A World is:
//
//   - Keystone (python3-keystone's WSGI application in a threaded wsgiref
//     server of ours, one process) with fernet tokens, application
//     credentials and trusts, on a private loopback port;
//   - Heat as `heat-all` (API and engine in one process, convergence engine,
//     oslo.messaging's in-process fake:// transport: no RabbitMQ), on a
//     private loopback port;
//   - two private PostgreSQL databases on a server the caller names (the
//     test binary's pgtest cluster, the embedded server of `make run`),
//     restored from a cached dump made once per package version by
//     keystone-manage db_sync + bootstrap and heat-manage db_sync;
//   - a front listener for the simulator's APIs that validates every token
//     with Keystone (as keystonemiddleware does for the real services) and
//     hands the request to the simulator serving that token's project, so
//     several tests share one world, each in its own Keystone project.
//
// Nothing is installed as a system service and nothing listens outside
// 127.0.0.1: the configuration written here names only loopback endpoints
// (Keystone's auth URLs, Heat's metadata and wait-condition URLs, every
// catalog entry), and Close stops both processes and drops both databases.
// A world also watches its processes' sockets and reports any that leads
// off loopback (Outbound).
//
// Packages: heat-api, heat-engine and keystone from Debian bookworm.
// EnsurePackages installs them with apt-get when running as root (with
// policy-rc.d answering 101 so no service starts) and otherwise fails with
// the command to run; tests never skip for want of them.
package osworld
