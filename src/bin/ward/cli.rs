//! The command line, declared with clap's derive: `--help`, `--version`, usage errors and
//! the shell completions all come from these types.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;
use ward_client::{parse_acl, Acl, Tls};

pub const DEFAULT_SERVER: &str = "127.0.0.1:7181";

/// What `lock`, `semaphore` and `elect` do with CMD and say while waiting: the end of each
/// one's long help (a macro, so that `concat!` can join it to each).
macro_rules! cmd_life {
    () => {
        "

CMD runs in a process group of its own and is stopped as a whole, with everything it
started: if the lock (or leadership) is lost, because its session expired or ward was cut
off from the server too long, the group gets SIGTERM, then SIGKILL if any of it still runs
--grace SECS later (default 10), and ward exits 3. A SIGTERM, SIGINT (Ctrl-C) or SIGHUP to
ward is passed on to the group the same way (a second one sends SIGKILL at once), and ward
exits 128+signal. Being outside the terminal's foreground group, CMD cannot read from the
terminal, and Ctrl-Z stops ward but not CMD. What CMD leaves running when it exits by
itself is not stopped.

While it waits, ward says on stderr, once, whom it waits behind (the holders' context: the
pid, host and command of another ward), and when it loses and regains the connection to
the server; --quiet turns these lines off."
    };
}

const EXIT_STATUS: &str = "\
Exit status: 0 on success; 1 when the server or the connection reported an error; 2 for a
command line that does not parse. lock, semaphore and elect exit with CMD's status, or 3 (the
lock or leadership was lost; CMD's process group was stopped), 4 (--timeout passed; CMD not
run), 127 (CMD could not be started), 128+N (signal N reached ward; CMD was stopped). watch, get -w and
elect --observe exit 0 when interrupted by SIGINT or SIGTERM.

The server is --server, else $WARD_SERVER, else 127.0.0.1:7181. Credentials are --auth, else
$WARD_AUTH (a command line is for anyone on the machine to list; the environment is not). With --tls-ca, ward
speaks TLS to it. Use `--` before a DATA that starts with '-'.";

#[derive(Debug, Parser)]
#[command(name = "ward", version, about = "Command-line client for a Ward server", after_help = EXIT_STATUS)]
// A bare `ward` is a usage error like any other: a short message and a hint, not the help.
#[command(arg_required_else_help = false)]
pub struct Cli {
    /// Server address(es), comma-separated [default: $WARD_SERVER, then 127.0.0.1:7181]
    #[arg(long, global = true, value_name = "ADDR[,ADDR...]")]
    pub server: Option<String>,

    /// Session timeout to ask the server for, in milliseconds
    #[arg(long, global = true, value_name = "N")]
    pub session_timeout_ms: Option<u64>,

    /// Connect over TLS, trusting the CA certificates in FILE (PEM): for servers started
    /// with --tls-cert
    #[arg(long, global = true, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,

    /// This client's certificate (PEM), for servers that ask for one (with --tls-key)
    #[arg(long, global = true, value_name = "FILE", requires_all = ["tls_ca", "tls_key"])]
    pub tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM)
    #[arg(long, global = true, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// The name the servers' certificates must carry [default: the host of each address]
    #[arg(long, global = true, value_name = "NAME", requires = "tls_ca")]
    pub tls_server_name: Option<String>,

    /// Authenticate before the command, as zkCli's addauth: digest:USER:PASSWORD (may be
    /// repeated) [default: $WARD_AUTH]
    #[arg(long, global = true, value_name = "SCHEME:CREDENTIALS", value_parser = auth_spec)]
    pub auth: Vec<AuthSpec>,

    /// Output format of the reading commands (ls, tree, get, stat, acl get, holders, members,
    /// stats, watch, elect --observe, check)
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub output: Format,

    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// `--server`, else a non-empty `$WARD_SERVER` (`env`), else [`DEFAULT_SERVER`].
    pub fn server(&self, env: Option<String>) -> String {
        self.server.clone().or(env.filter(|s| !s.is_empty())).unwrap_or_else(|| DEFAULT_SERVER.to_owned())
    }

    pub fn session_timeout(&self) -> Option<Duration> {
        self.session_timeout_ms.map(Duration::from_millis)
    }

    /// The TLS settings of `--tls-*`, read from their files; `None` without `--tls-ca`.
    pub fn tls(&self) -> Result<Option<Tls>, ward_client::Error> {
        let Some(ca) = &self.tls_ca else { return Ok(None) };
        let client = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        let tls = Tls::from_files(ca, client)?;
        match &self.tls_server_name {
            Some(name) => tls.server_name(name).map(Some),
            None => Ok(Some(tls)),
        }
    }

    /// `--auth`, else a non-empty `$WARD_AUTH` (`env`, one SCHEME:CREDENTIALS).
    pub fn auth(&self, env: Option<String>) -> Result<Vec<AuthSpec>, String> {
        match env.filter(|s| !s.is_empty()) {
            Some(env) if self.auth.is_empty() => auth_spec(&env).map(|spec| vec![spec]),
            _ => Ok(self.auth.clone()),
        }
    }
}

/// `SCHEME:CREDENTIALS` (`digest:alice:secret`). `Debug` hides the credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthSpec {
    pub scheme: String,
    pub credentials: String,
}

impl std::fmt::Debug for AuthSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:..", self.scheme)
    }
}

fn auth_spec(text: &str) -> Result<AuthSpec, String> {
    match text.split_once(':') {
        Some((scheme, credentials)) if !scheme.is_empty() => {
            Ok(AuthSpec { scheme: scheme.to_owned(), credentials: credentials.to_owned() })
        }
        _ => Err("expected SCHEME:CREDENTIALS, such as digest:USER:PASSWORD".into()),
    }
}

/// An ACL in zkCli's notation: `scheme:id:perms`, comma-separated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclArg(pub Vec<Acl>);

fn acl_spec(text: &str) -> Result<AclArg, String> {
    parse_acl(text).map(AclArg).map_err(|e| e.to_string())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Lines for people and shell tools
    Text,
    /// One JSON document (watch, get -w and elect --observe: one JSON object a line)
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the children of PATH
    Ls {
        /// The node whose children to list
        path: String,
    },
    /// Print PATH and every node below it
    Tree {
        /// The top of the subtree
        path: String,
    },
    /// Print the data of PATH
    Get {
        /// The node
        path: String,
        /// Then wait for the next change of PATH (data set or delete) and print it
        #[arg(short, long)]
        watch: bool,
    },
    /// Print the metadata of PATH
    Stat {
        /// The node
        path: String,
    },
    /// Create a node and print its path
    Create {
        /// Ephemeral: deleted when ward's session ends
        #[arg(short, long)]
        ephemeral: bool,
        /// Sequential: the server appends a 10-digit sequence number
        #[arg(short, long)]
        sequential: bool,
        /// Keep the session (and so the ephemerals) until killed or stdin closes
        #[arg(long)]
        hold: bool,
        /// The node's ACL in zkCli's notation, e.g. auth::cdrwa, world:anyone:r,
        /// digest:USER:HASH:rw, ip:10.0.0.0/8:r [default: world:anyone:cdrwa]
        #[arg(long, value_name = "ACL", value_parser = acl_spec)]
        acl: Option<AclArg>,
        /// The node to create (with -s: the prefix of its name)
        path: String,
        /// The data; `-` reads stdin to its end
        data: Option<String>,
    },
    /// Replace the data of PATH
    Set {
        /// Only if the node is at this version (else "bad version", exit 1)
        #[arg(short, long = "expected-version", value_name = "VERSION", allow_negative_numbers = true)]
        version: Option<i32>,
        /// The node
        path: String,
        /// The data; `-` reads stdin to its end
        data: String,
    },
    /// Delete PATH
    Rm {
        /// And everything below it
        #[arg(short, long, conflicts_with = "version")]
        recursive: bool,
        /// Only if the node is at this version (else "bad version", exit 1)
        #[arg(short, long = "expected-version", value_name = "VERSION", allow_negative_numbers = true)]
        version: Option<i32>,
        /// Allow `rm -r /`: delete every node below the root (the root itself stays)
        #[arg(long)]
        force_root: bool,
        /// The node to delete
        path: String,
    },
    /// Stream changes of PATH: one line per event (created, changed, deleted) until
    /// interrupted
    #[command(long_about = "Stream changes of PATH: one line per event until interrupted.

Events: `created PATH zxid=N version=N`, `changed PATH zxid=N version=N` (data set) and
`deleted PATH [zxid=N]`. Without options, PATH itself and the creation and deletion of its
children are reported; --children adds the children's own data changes, --recursive every
node below PATH at any depth (at most 10000 nodes).

ZooKeeper-style watches fire once, so ward re-arms each after it fires and then re-reads the
node: changes made in between are never lost, but several quick changes of one node may be
reported as one event (its version says how many sets it spans).")]
    Watch {
        /// The node to watch (it need not exist yet)
        path: String,
        /// Also the data changes of PATH's children (one level)
        #[arg(long)]
        children: bool,
        /// Every node below PATH, at any depth
        #[arg(long, conflicts_with = "children")]
        recursive: bool,
    },
    /// Print or replace the ACL of PATH, or make a digest id
    Acl {
        #[command(subcommand)]
        action: AclAction,
    },
    /// The holders of the lock PATH, then the waiters in queue order
    #[command(long_about = "The holders of the lock PATH, then the waiters in queue order, one a line:
`holder|waiter|delayed PATH token=N queued=TIME session=ID data=TEXT`, TIME in UTC (ISO 8601). \
queued is when the contender joined the queue: for a holder that waited, when it asked, not when \
it began to hold (the server records no grant time; the web console shows when it saw the grant).")]
    Holders {
        /// The lock (or semaphore) directory
        path: String,
    },
    /// The ensemble's members (or add/remove one)
    Members {
        #[command(subcommand)]
        change: Option<MembersChange>,
    },
    /// The server's counters: last zxid, znodes, sessions, watches, lock grants, log fsyncs
    Stats,
    /// Run CMD while holding the lock(s) PATH
    #[command(long_about = concat!("Run CMD while holding the lock PATH (all of them, taken all or nothing).

CMD gets WARD_FENCING_TOKEN and WARD_LOCK_PATH (its contender node; comma-separated, one per
PATH) in its environment. ward releases when CMD exits and exits with its status;
--timeout passing first exits 4 without running CMD; a CMD that cannot be started exits 127.

--lock-delay SECS: if a holder's session ends without releasing (its process was killed or
stalled past the session timeout), the next holder is granted the lock no earlier than SECS
after that; CMD exiting, or ward stopping it, releases at once. The first contender of an
idle lock sets the delay; the others must ask for the same or none (docs/recipes.md).", cmd_life!()))]
    Lock {
        /// The read side of a read/write lock
        #[arg(long)]
        shared: bool,
        #[command(flatten)]
        timeout: Timeout,
        #[command(flatten)]
        delay: LockDelay,
        /// The lock directories (several: all taken at once, or none)
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<String>,
        #[command(flatten)]
        running: RunArgs,
        #[command(flatten)]
        cmd: Cmd,
    },
    /// Run CMD while holding one of N permits of the semaphore PATH
    #[command(long_about = concat!("Run CMD while holding one of N permits of the semaphore PATH.

CMD gets WARD_FENCING_TOKEN and WARD_LOCK_PATH (its contender node) in its environment, as
with `ward lock`; the first contender of an idle semaphore fixes N, and asking with another
N fails.", cmd_life!()))]
    Semaphore {
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        permits: u32,
        #[command(flatten)]
        timeout: Timeout,
        #[command(flatten)]
        delay: LockDelay,
        /// The semaphore directory
        path: String,
        #[command(flatten)]
        running: RunArgs,
        #[command(flatten)]
        cmd: Cmd,
    },
    /// Campaign in the election PATH and run CMD while leader; or --observe it
    #[command(long_about = concat!("Campaign in the election PATH as --id NAME and run CMD while leader; or --observe it.

CMD gets WARD_FENCING_TOKEN and WARD_LOCK_PATH (its contender node) in its environment; ward
resigns when CMD exits and exits with its status.", cmd_life!()))]
    Elect {
        /// The name to campaign with (what observers see)
        #[arg(long, value_name = "NAME", required_unless_present = "observe")]
        id: Option<String>,
        /// Print the leader, then each new leader, one a line, until interrupted
        #[arg(long, conflicts_with_all = ["id", "grace", "quiet"])]
        observe: bool,
        /// The election directory
        path: String,
        #[command(flatten)]
        running: RunArgs,
        /// The command to run while leader (not with --observe)
        #[arg(last = true, value_name = "CMD", required_unless_present = "observe", conflicts_with = "observe")]
        cmd: Vec<String>,
    },
    /// Run workloads against an ensemble while injecting faults, and check the history
    #[command(long_about = "Run workloads against an ensemble while injecting faults, record the history \
(JSON lines in --out), and check it against docs/guarantees.md: linearizable registers, lock safety \
with fencing, sessions and their ephemerals, watch order, sequential creates, durability, and \
convergence of the members' state. --ensemble N starts N local ward-server members (the binary beside \
this program, or $WARD_SERVER_BIN) behind proxies it controls and kills, pauses, partitions, restarts \
and removes and adds them; --servers runs the workloads only, against servers already running (one \
server: `ward check --servers ADDR --admin ADDR`, --admin being its --admin-listen address). --svg FILE \
draws the run as a timeline. Exit 0 only when every checker passed, 1 otherwise.",
              // Both forms on the usage line, so that a `ward check` given neither shows how
              // to check one running server too, not only a local ensemble.
              override_usage = "ward check --ensemble N [OPTIONS]\n       \
ward check --servers ADDR[,ADDR...] [--admin ADDR[,ADDR...]] [OPTIONS]")]
    Check(CheckArgs),
    /// Make a CA and the certificates it signs, for TLS (no server needed)
    #[command(long_about = "Make a certificate authority and the certificates it signs, for Ward's TLS \
(docs/security.md \"Making certificates\"): `ward tls ca create` once, then `ward tls cert create server`, \
`client` or `peer` for each server, client and ensemble member. Keys are written readable by their \
owner only, and no file is replaced without --force.")]
    Tls {
        #[command(subcommand)]
        what: TlsWhat,
    },
    /// Write a backup of a running member to FILE
    #[command(long_about = "Write a backup of a running member to FILE: every write committed when it \
was asked for, taken while writes go on, through the member's admin listener (the admin token \
is needed: a backup holds every node, whatever its ACL). FILE is written beside, fsynced and \
checked before it gets its name; an existing FILE is never replaced. Restore with \
`ward-server --restore FILE --data-dir DIR` (docs/operations.md, \"Backup and restore\").")]
    Backup(BackupArgs),
    /// Print the shell completion script for SHELL
    #[command(long_about = "Print the shell completion script for SHELL, e.g.
`ward completions bash > /etc/bash_completion.d/ward` or
`ward completions zsh > \"${fpath[1]}/_ward\"`.")]
    Completions { shell: clap_complete::Shell },
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Where the backup goes (a new file)
    pub file: std::path::PathBuf,
    /// The member's admin listener
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7180")]
    pub admin: String,
    /// The admin token (its first line), as given to the member with --admin-token-file
    #[arg(long, value_name = "FILE", required_unless_present = "check")]
    pub admin_token_file: Option<std::path::PathBuf>,
    /// Take no backup: check the existing FILE whole (checksums, lengths) and say what it
    /// holds
    #[arg(long)]
    pub check: bool,
}

// One target, --ensemble or --servers: a group, so that the error for neither names both.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["ensemble", "servers"])))]
pub struct CheckArgs {
    /// Start N local members and inject faults into them
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=9))]
    pub ensemble: Option<u64>,
    /// Run against these running servers, without faults
    #[arg(long, value_name = "ADDR[,ADDR...]")]
    pub servers: Option<String>,
    /// The admin listeners of the --servers (HOST:PORT of each one's --admin-listen), for the
    /// convergence checker
    #[arg(long, value_name = "ADDR[,ADDR...]", requires = "servers", value_delimiter = ',')]
    pub admin: Vec<std::net::SocketAddr>,
    /// How long the workloads run, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub duration: u64,
    /// Seed of the fault schedule and the workload choices [default: from the clock, printed]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The workloads to run
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub workload: Vec<CheckWorkload>,
    /// The faults to inject (--ensemble only)
    #[arg(long, value_enum, value_delimiter = ',', default_value = "kill,pause,partition")]
    pub nemesis: Vec<CheckFault>,
    /// Where to write the history, and with --ensemble each member's log (member-ID.log)
    /// [default: a new directory under the system temp dir]
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Draw the run as a timeline (SVG) in FILE
    #[arg(long, value_name = "FILE")]
    pub svg: Option<std::path::PathBuf>,
    /// An argument added to every member's command line (repeatable; for tests)
    #[arg(long, value_name = "ARG", hide = true, allow_hyphen_values = true)]
    pub server_arg: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckWorkload {
    /// Synced reads, writes and compare-and-sets on a few keys
    Registers,
    /// Lock, read a counter, fenced write of counter + 1, unlock
    Locks,
    /// Short sessions each owning an ephemeral node, closed or expired
    Sessions,
    /// Data watches armed and read until they fire, on keys a writer sets
    Watches,
    /// Persistent sequential creates under one parent
    Sequential,
    /// All of them
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckFault {
    /// kill -9 a member, then restart it
    Kill,
    /// SIGSTOP a member, then SIGCONT
    Pause,
    /// Cut a member off from its peers, then heal
    Partition,
    /// Drop what a member sends its peers, or what they send it, then heal
    OneWay,
    /// Split the other members in two that cannot reach each other; the member reaches both
    Bridge,
    /// SIGTERM a member (a clean stop), then start it again
    Restart,
    /// Remove a member from the ensemble, then add it back with an empty data directory
    Member,
    /// Every kind
    All,
    /// No faults
    None,
}

#[derive(Debug, Subcommand)]
pub enum TlsWhat {
    /// The certificate authority
    Ca {
        #[command(subcommand)]
        action: TlsCaAction,
    },
    /// Certificates signed by the CA
    Cert {
        #[command(subcommand)]
        action: TlsCertAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum TlsCaAction {
    /// Make a CA: NAME.pem (its certificate: what servers and clients trust, --tls-ca,
    /// --tls-client-ca, --peer-tls-ca) and NAME-key.pem (its key: keep it off the servers)
    Create(TlsCaCreate),
}

#[derive(Debug, Subcommand)]
pub enum TlsCertAction {
    /// Make a certificate signed by the CA: NAME.pem and NAME-key.pem, e.g. `ward tls
    /// cert create server --ip 10.0.0.1 --dns ward-1.example.com`
    Create(TlsCertCreate),
}

#[derive(Debug, Args)]
pub struct TlsFiles {
    /// The directory to write the files in
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Valid for N days from now [default: 1825 for a CA, 365 for a certificate]
    #[arg(long, value_name = "N")]
    pub days: Option<u32>,
    /// Replace files that exist
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct TlsCaCreate {
    /// The files' name: NAME.pem and NAME-key.pem
    #[arg(long, value_name = "NAME", default_value = "ward-ca")]
    pub name: String,
    /// The CA's subject (CN=...) [default: "Ward CA" and a random number, so that no two
    /// CAs share a name]
    #[arg(long, value_name = "CN")]
    pub common_name: Option<String>,
    #[command(flatten)]
    pub files: TlsFiles,
}

/// What a leaf certificate is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TlsRole {
    /// A server's listeners (--tls-cert): serverAuth, for the names in --ip and --dns
    Server,
    /// A client (ward --tls-cert, kazoo's certfile): clientAuth; its x509 identity is
    /// CN=<common name>
    Client,
    /// An ensemble member's peer link (--peer-tls-cert): serverAuth and clientAuth, for the
    /// host of its peer address
    Peer,
}

#[derive(Debug, Args)]
pub struct TlsCertCreate {
    // A word rather than --server|--client|--peer (Consul's -server): `--server` is ward's
    // global server address.
    /// What the certificate is for
    #[arg(value_enum, value_name = "ROLE")]
    pub role: TlsRole,
    /// An IP address the holder is reached by (repeatable, or comma-separated)
    #[arg(long, value_name = "IP", value_delimiter = ',')]
    pub ip: Vec<std::net::IpAddr>,
    /// A DNS name the holder is reached by (repeatable, or comma-separated)
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub dns: Vec<String>,
    /// The files' name: NAME.pem and NAME-key.pem [default: ward-ROLE-N, the first N free]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The certificate's subject (CN=...) [default: the files' name]
    #[arg(long, value_name = "CN")]
    pub common_name: Option<String>,
    /// The CA's certificate [default: DIR/ward-ca.pem]
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// The CA's key [default: DIR/ward-ca-key.pem]
    #[arg(long, value_name = "FILE")]
    pub ca_key: Option<PathBuf>,
    #[command(flatten)]
    pub files: TlsFiles,
}

#[derive(Debug, Subcommand)]
pub enum AclAction {
    /// Print the ACL of PATH, one entry a line (scheme:id:perms)
    #[command(
        long_about = "Print the ACL of PATH, one entry a line, in zkCli's notation (scheme:id:perms), then `aversion=N`. Needs READ or ADMIN on PATH; without ADMIN, digest ids show as USER:x."
    )]
    Get {
        /// The node
        path: String,
    },
    /// Replace the ACL of PATH (needs ADMIN on it)
    Set {
        /// Only if the ACL is at this version (aversion; else "bad version", exit 1)
        #[arg(short, long = "expected-version", value_name = "VERSION", allow_negative_numbers = true)]
        version: Option<i32>,
        /// The node
        path: String,
        /// The new ACL in zkCli's notation, e.g. digest:USER:HASH:cdrwa,world:anyone:r
        #[arg(value_parser = acl_spec)]
        acl: AclArg,
    },
    /// Print the digest id of USER:PASSWORD (USER:HASH), for digest ACLs and
    /// ward-server --super-digest; reads stdin if no argument is given
    Digest {
        /// The user and password; omit it to read them from stdin (not listed with the
        /// process)
        #[arg(value_name = "USER:PASSWORD")]
        user_password: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum MembersChange {
    /// Add a member: it joins as a learner, catches up, then votes (with --observer: it
    /// stays a learner that serves clients and never votes)
    Add {
        /// The member's id and peer address
        #[arg(value_name = "ID=PEER_ADDR", value_parser = member_spec)]
        member: (u64, String),
        /// Add it as an observer: it serves reads, watches, sessions and lock waits and
        /// forwards writes, but never votes, so its loss changes no quorum
        #[arg(long)]
        observer: bool,
    },
    /// Remove a member (the leader too: another is elected)
    Remove { id: u64 },
    /// Hand the leadership to member ID, or to the follower most up to date
    #[command(long_about = "Hand the leadership to member ID, or (without ID) to the follower whose log is most up \
to date, and wait until it leads; prints the member that leads. Writes in flight carry on at the new leader and \
clients keep their sessions. A leader stopped with SIGTERM does this itself before it stops.")]
    TransferLeader {
        /// The member to lead (default: the follower most up to date)
        id: Option<u64>,
    },
}

#[derive(Debug, Args)]
pub struct Timeout {
    /// Give up (exit 4, CMD not run) if not granted within SECS
    #[arg(long = "timeout", value_name = "SECS", value_parser = seconds)]
    pub limit: Option<Duration>,
}

#[derive(Debug, Args)]
pub struct LockDelay {
    /// After a holder's session ends without releasing, grant the next holder no earlier
    /// than SECS later
    #[arg(long = "lock-delay", value_name = "SECS", value_parser = seconds)]
    pub delay: Option<Duration>,
}

/// How `lock`, `semaphore` and `elect` run CMD (see `cmd_life!`).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// How long CMD's process group has to end after SIGTERM (a lost lock) or a signal
    /// passed on from ward, before SIGKILL
    #[arg(long, value_name = "SECS", value_parser = seconds, default_value = "10")]
    pub grace: Duration,
    /// Say nothing on stderr while waiting: neither whom ward waits behind nor that it lost
    /// (and regained) the connection to the server
    #[arg(short, long)]
    pub quiet: bool,
}

/// `-- CMD [ARGS...]`: the `--` is required, which keeps CMD's own options (`sh -c`) away
/// from ward's.
#[derive(Debug, Args)]
pub struct Cmd {
    /// The command to run, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub argv: Vec<String>,
}

fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("not a number of seconds: {text}"))
}

fn member_spec(text: &str) -> Result<(u64, String), String> {
    text.split_once('=')
        .and_then(|(id, addr)| Some((id.parse().ok()?, addr.to_owned())))
        .filter(|(_, addr)| !addr.is_empty())
        .ok_or_else(|| format!("expected ID=PEER_ADDR, not {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("ward").chain(args.iter().copied()))
    }

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_create_with_flags_anywhere() {
        let cli = parse(&["--server", "h:1", "create", "-es", "--hold", "/a", "x"]).expect("parses");
        assert_eq!(cli.server(None), "h:1");
        let Command::Create { ephemeral, sequential, hold, path, data, .. } = cli.command else { panic!("create") };
        assert!(ephemeral && sequential && hold);
        assert_eq!((path.as_str(), data.as_deref()), ("/a", Some("x")));
    }

    #[test]
    fn parses_auth_and_acls_in_zkclis_notation() {
        let cli =
            parse(&["--auth", "digest:alice:pw:with:colons", "create", "--acl", "auth::cdrwa,world:anyone:r", "/a"])
                .expect("parses");
        assert_eq!(
            cli.auth(Some("digest:env:x".into())).expect("auth"),
            [AuthSpec { scheme: "digest".into(), credentials: "alice:pw:with:colons".into() }]
        );
        assert!(!format!("{cli:?}").contains("pw:with"), "Debug hides credentials");
        let Command::Create { acl: Some(AclArg(acl)), .. } = cli.command else { panic!("create --acl") };
        assert_eq!(acl.len(), 2);
        let env = parse(&["ls", "/"]).expect("parses").auth(Some("digest:bob:pw".into())).expect("env");
        assert_eq!(env[0].credentials, "bob:pw");
        let cli = parse(&["acl", "set", "-v", "2", "/a", "ip:10.0.0.0/8:r"]).expect("parses");
        assert!(matches!(cli.command, Command::Acl { action: AclAction::Set { version: Some(2), .. } }));
        for bad in
            [&["--auth", "nocolon", "ls", "/"][..], &["create", "--acl", "world:anyone", "/a"], &["acl", "set", "/a"]]
        {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn server_comes_from_flag_then_env_then_default() {
        let env = || Some("e:2".to_string());
        assert_eq!(parse(&["ls", "/"]).expect("parses").server(env()), "e:2");
        assert_eq!(parse(&["--server=f:3", "ls", "/"]).expect("parses").server(env()), "f:3");
        assert_eq!(parse(&["ls", "/", "--server", "g:4"]).expect("parses").server(env()), "g:4");
        assert_eq!(parse(&["ls", "/"]).expect("parses").server(Some(String::new())), DEFAULT_SERVER);
        assert_eq!(parse(&["ls", "/"]).expect("parses").server(None), DEFAULT_SERVER);
    }

    #[test]
    fn double_dash_allows_data_with_a_dash() {
        let cli = parse(&["set", "--", "/a", "-1"]).expect("parses");
        let Command::Set { path, data, version } = cli.command else { panic!("set") };
        assert_eq!((path.as_str(), data.as_str(), version), ("/a", "-1", None));
        let cli = parse(&["set", "-v", "3", "/a", "-"]).expect("parses");
        let Command::Set { data, version, .. } = cli.command else { panic!("set") };
        assert_eq!((data.as_str(), version), ("-", Some(3)));
    }

    #[test]
    fn parses_lock_and_elect_with_the_command_after_dashes() {
        let cli = parse(&["lock", "--timeout", "1.5", "/l", "--", "sh", "-c", "echo --timeout"]).expect("parses");
        let Command::Lock { shared, timeout, paths, cmd, delay, running } = cli.command else { panic!("lock") };
        assert_eq!(delay.delay, None);
        assert_eq!((running.grace, running.quiet), (Duration::from_secs(10), false));
        assert!(!shared);
        assert_eq!(timeout.limit, Some(Duration::from_millis(1500)));
        assert_eq!(
            (paths, cmd.argv),
            (vec!["/l".to_string()], vec!["sh".into(), "-c".into(), "echo --timeout".into()])
        );
        let cli = parse(&["lock", "--shared", "/a", "/b", "--", "sh"]).expect("parses");
        assert!(matches!(cli.command, Command::Lock { shared: true, ref paths, .. } if paths.len() == 2));
        let cli = parse(&["semaphore", "/s", "--permits", "3", "--grace", "0.5", "-q", "--", "sh"]).expect("parses");
        let Command::Semaphore { permits: 3, running, .. } = cli.command else { panic!("semaphore") };
        assert_eq!((running.grace, running.quiet), (Duration::from_millis(500), true));
        let cli = parse(&["elect", "/e", "--id", "n1", "--", "./lead.sh", "-v"]).expect("parses");
        let Command::Elect { id, observe, cmd, .. } = cli.command else { panic!("elect") };
        assert_eq!((id.as_deref(), observe, cmd.len()), (Some("n1"), false, 2));
        let cli = parse(&["elect", "--observe", "/e", "--output", "json"]).expect("parses");
        assert!(matches!(cli.command, Command::Elect { observe: true, .. }));
        assert_eq!(cli.output, Format::Json);
        let cli = parse(&["members", "add", "4=h:7191"]).expect("parses");
        assert!(matches!(
            cli.command,
            Command::Members { change: Some(MembersChange::Add { member: (4, _), observer: false }) }
        ));
    }

    #[test]
    fn parses_tls_certificate_commands() {
        let cli = parse(&["tls", "cert", "create", "peer", "--ip", "127.0.0.1,::1", "--dns", "w1", "--dns", "w2"])
            .expect("parses");
        let Command::Tls { what: TlsWhat::Cert { action: TlsCertAction::Create(args) } } = cli.command else {
            panic!("tls cert create")
        };
        assert_eq!((args.role, args.ip.len(), args.dns.len(), args.files.force), (TlsRole::Peer, 2, 2, false));
        let cli = parse(&["tls", "ca", "create", "--dir", "/tmp/x", "--days", "10", "--force"]).expect("parses");
        let Command::Tls { what: TlsWhat::Ca { action: TlsCaAction::Create(args) } } = cli.command else {
            panic!("tls ca create")
        };
        assert_eq!((args.name.as_str(), args.files.days, args.files.force), ("ward-ca", Some(10), true));
    }

    #[test]
    fn refuses_bad_command_lines() {
        for bad in [
            &[][..],
            &["frob", "/"],
            &["ls"],
            &["ls", "/", "/b"],
            &["ls", "-e", "/"],
            &["rm", "-x", "/a"],
            &["rm", "-r", "-v", "1", "/a"],
            &["--session-timeout-ms", "soon", "ls", "/"],
            &["--server"],
            &["--output", "yaml", "ls", "/"],
            &["lock", "/l"],
            &["lock", "/l", "true"],
            &["lock", "/l", "--"],
            &["lock", "--", "/l", "true"],
            &["lock", "--timeout", "soon", "/l", "--", "true"],
            &["lock", "--timeout", "-1", "/l", "--", "true"],
            &["lock", "--id", "a", "/l", "--", "true"],
            &["elect", "/e", "--", "true"],
            &["elect", "--id", "a", "--timeout", "1", "/e", "--", "true"],
            &["elect", "--id", "a", "/e", "/f", "--", "true"],
            &["elect", "--observe", "/e", "--", "true"],
            &["elect", "--observe", "--id", "a", "/e"],
            &["elect", "--observe", "--quiet", "/e"],
            &["elect", "--observe", "--grace", "1", "/e"],
            &["lock", "--grace", "soon", "/l", "--", "true"],
            &["ls", "--quiet", "/"],
            &["semaphore", "/s", "--", "true"],
            &["semaphore", "--permits", "0", "/s", "--", "true"],
            &["semaphore", "--permits", "2", "/s", "/t", "--", "true"],
            &["lock", "--permits", "2", "/s", "--", "true"],
            &["elect", "--shared", "--id", "a", "/e", "--", "true"],
            &["holders"],
            &["ls", "--timeout", "1", "/"],
            &["members", "add", "4"],
            &["members", "remove", "x"],
            &["watch", "--children", "--recursive", "/x"],
            &["completions", "tcsh-but-not-really"],
            &["tls", "cert", "create"],
            &["tls", "cert", "create", "admin"],
            &["tls", "cert", "create", "server", "--ip", "localhost"],
            &["tls", "ca", "create", "--days", "-1"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
