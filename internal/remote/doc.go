// Package remote runs commands on and copies files to the VMs of a VNF over
// SSH, for the management drivers. It is a leaf library: it knows nothing
// of VNFs, and it keeps host key pins through the PinStore interface
// (internal/store implements it on PostgreSQL).
//
// Connecting ([Dial], [Target]):
//   - password, keyboard-interactive (answered with the password) and
//     private key authentication (PEM in any format x/crypto reads,
//     optionally with a passphrase);
//   - retries with exponential backoff (200 ms doubling to 5 s, ±20 %
//     jitter) while the host is unreachable or sshd is not up yet
//     (connection refused/reset, timeouts, no route, "handshake failed:
//     EOF"), until Target.MaxWait (default 5 min) or the context's
//     deadline; then a *ConnectError with the last cause;
//   - authentication failures are permanent: *AuthError naming the user and
//     host (Target.RetryAuth retries them for hosts whose password is set
//     late in the boot);
//   - host keys are verified before authenticating (see [HostKeyPolicy]):
//     the first contact with a server pins its key per (server id, address)
//     in the PinStore, or, when the cloud published fingerprints
//     ([FingerprintsFromConsole]), requires a key among them; later
//     contacts must present the pinned key, and only pinned key types are
//     negotiated (golang/go#29286). A mismatch is a *HostKeyMismatchError
//     that names the host and both fingerprints; nothing was sent to the
//     host. A heal re-pins with HostKeyRepin or PinStore.Replace.
//   - how a first contact trusts a key is [HostKeyTrust]: TrustPublished
//     waits (bounded) for the cloud's fingerprints (FetchFingerprints) and
//     refuses without them (*UnpublishedError, nothing sent); TrustPinned
//     takes the caller's fingerprints; TrustTOFU pins whatever answers first.
//   - keepalives detect dead hosts so that commands fail instead of hanging;
//   - a [Session] (OpenSession) reconnects once, host key checked against
//     the pin, when a command or upload could not start, and never repeats
//     a command that may have run; the replaced connection stays open until
//     the commands still running on it end.
//
// Running ([Client.Run], [RunOpts]):
//   - every value placed in a command line goes through [Quote] or
//     [Command] (POSIX single quoting);
//   - a per-command Timeout and the context bound the command; an abort
//     sends SIGTERM (and SIGKILL after a grace time) to the remote process
//     group and returns promptly; under sudo a small root wrapper shell
//     passes the abort on to the whole command;
//   - a non-zero exit is a *CommandError with the last lines of stdout and
//     stderr;
//   - output is streamed line by line to RunOpts.Output and kept in bounded
//     buffers whatever the command prints;
//   - secrets (Target.Password, Passphrase, SudoPassword, Target.Secrets,
//     RunOpts.Secrets, Client.AddSecrets), including their quoted forms,
//     are masked in errors, output lines and logs; Result.Stdout/Stderr
//     stay raw for parsing and must not be logged;
//   - Sudo runs `sudo -n` for NOPASSWD users, else `sudo -S -k` with an
//     empty prompt and the password written to stdin ahead of the command's
//     own input.
//
// Files go up with [Client.Upload] (SFTP, falling back to `cat` on an exec
// channel when the server has no sftp subsystem) or [Client.UploadAsRoot]
// (through sudo), atomically and with the given mode. [ForEach] fans work
// out over many hosts with a concurrency cap.
//
// Package remotetest has an in-process SSH server for tests.
package remote
