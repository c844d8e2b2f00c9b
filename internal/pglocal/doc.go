// Package pglocal runs a private PostgreSQL server from the PostgreSQL binaries
// installed on the machine (Debian: /usr/lib/postgresql/<major>/bin, or the
// directory named by the PG_BINDIR environment variable).
//
// It backs "vnfm serve" when DATABASE_URL is unset (data survives restarts in
// the data directory) and the test helper package pgtest (Options.Fast).
//
// # Layout
//
// Everything lives under Options.DataDir:
//
//	DataDir/pglocal.json      port of the last run (reused when free) and, see below, the cluster location
//	DataDir/pglocal.lock      flock held while a Server is running: one Server per DataDir
//	DataDir/postgres.log      server log (appended; rotated to postgres.log.1 past 16 MiB at start)
//	<root>/pgdata/            the cluster (initdb -D)
//	<root>/pgrun/             the server's unix socket directory (mode 0700)
//	<root>/pglocal.password   superuser password (mode 0600)
//
// <root> is DataDir itself, except in the root case below.
//
// # Running as root
//
// initdb and pg_ctl refuse to run as root. When the process runs as root they
// are started as the unprivileged "postgres" account (created by Debian's
// postgresql-common), or as the owner of an existing pgdata directory. That
// account must be able to traverse every directory down to its files. When it
// cannot — typically a checkout under /root, which is mode 0700 — pglocal does
// not ask anybody to loosen permissions on a home directory: it keeps the
// cluster under /var/lib/vnfm/<sha256(DataDir)[:16]>/ instead and records that
// location in DataDir/pglocal.json, so later starts find it even if the path
// check would now answer differently; a cluster found there that DataDir does
// not record (DataDir was deleted) is renamed to <root>.orphaned-<time>, not
// reused, so deleting DataDir still means starting empty. The log, state and
// lock files stay in
// DataDir (the log file descriptor is opened by this process and inherited by
// the server, so the server needs no access to DataDir). Destroy removes such
// an external root as well.
//
// # Network exposure and authentication
//
// The server listens only on 127.0.0.1 (listen_addresses) and on a unix socket
// in <root>/pgrun, a directory only the server account can enter
// (unix_socket_permissions = 0700). A unix socket path is limited to 107 bytes;
// when the directory path is too long the socket is disabled and only TCP is used.
//
// Authentication is scram-sha-256 for every connection, local and TCP: initdb
// sets a random 256-bit password for the superuser "postgres", stored in
// <root>/pglocal.password (0600, readable only by the user that runs pglocal
// and by root). "trust" on 127.0.0.1 would let any local user or process,
// including other containers sharing the network namespace, become database
// superuser and from there run programs as the server account (COPY ...
// PROGRAM); a password closes that at the cost of one SCRAM exchange per
// connection (a few ms, measured in the tests).
//
// # Crash recovery
//
// If the previous owner of DataDir died (kill -9) its server may still run,
// because pg_ctl detaches the server into its own session; Start recognises it
// (postmaster.pid names a live process whose executable is postgres and whose
// working directory is this pgdata), shuts it down (fast, then immediate) and
// starts a fresh one with the current options. If the server itself was
// killed, Start waits for its orphaned backends to exit (killing them after a
// grace period) and removes a postmaster.pid whose PID has been reused by an
// unrelated process, which PostgreSQL would otherwise refuse to start over.
// PostgreSQL then performs its normal WAL crash recovery.
package pglocal
