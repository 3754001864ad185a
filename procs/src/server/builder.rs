//! How a [`ServerProcess`] is started: its addresses, storage, ZooKeeper listener and flags.

use super::ServerProcess;
use crate::error::HarnessError;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Options for [`ServerProcess`], e.g.
/// `ServerProcess::builder().flags(&["--snapshot-every", "64"]).zookeeper().in_memory().start()`.
#[derive(Clone, Debug)]
pub struct ServerBuilder {
    pub(super) listen: SocketAddr,
    /// `None`: `--zk-listen off`.
    pub(super) zk_listen: Option<SocketAddr>,
    /// `None`: no `--zk-tls-listen`.
    pub(super) zk_tls_listen: Option<SocketAddr>,
    /// `None`: `--admin-listen off`.
    pub(super) admin_listen: Option<SocketAddr>,
    pub(super) in_memory: bool,
    pub(super) flags: Vec<String>,
    /// Environment variables for the process.
    pub(super) envs: Vec<(String, String)>,
    /// Only the test's flags, none of the harness's own.
    pub(super) bare: bool,
    /// `None`: [`crate::locate::server_binary`], built for the running test.
    pub(super) binary: Option<PathBuf>,
    /// Where every line of the server's stderr goes besides the kept tail.
    pub(super) log_file: Option<PathBuf>,
}

impl Default for ServerBuilder {
    fn default() -> ServerBuilder {
        ServerBuilder {
            listen: any_port(),
            zk_listen: None,
            zk_tls_listen: None,
            admin_listen: None,
            in_memory: false,
            flags: Vec::new(),
            envs: Vec::new(),
            bare: false,
            binary: None,
            log_file: None,
        }
    }
}

impl ServerBuilder {
    /// Adds flags after the harness's own (a later flag wins, so these override).
    pub fn flags(mut self, flags: &[&str]) -> ServerBuilder {
        self.flags.extend(flags.iter().map(|f| f.to_string()));
        self
    }

    /// Sets environment variables for the process (`WARD_*` options, `RUST_LOG`). The
    /// harness's own flags win over `WARD_*` options; see [`bare`](Self::bare).
    pub fn envs(mut self, vars: &[(&str, &str)]) -> ServerBuilder {
        self.envs.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self
    }

    /// Passes none of the harness's own flags (listen address, segment size, listeners, data
    /// directory): the test's flags, environment or `--config` file say everything. The
    /// process still runs in a directory of its own, so a relative `--data-dir` lands there
    /// ([`ServerProcess::dir`]). [`zookeeper`](Self::zookeeper) and [`admin`](Self::admin)
    /// then only say which listening lines to wait for.
    pub fn bare(mut self) -> ServerBuilder {
        self.bare = true;
        self
    }

    /// Runs `binary` instead of the test build's `ward-server` (which would be built first):
    /// for a program outside `cargo test` ([`crate::locate::server_binary_beside`]).
    pub fn binary(mut self, binary: PathBuf) -> ServerBuilder {
        self.binary = Some(binary);
        self
    }

    /// Appends every line the server writes to stderr, over all its incarnations, to `path`.
    pub fn log_file(mut self, path: PathBuf) -> ServerBuilder {
        self.log_file = Some(path);
        self
    }

    /// Listens on `addr` instead of a free 127.0.0.1 port: for servers whose addresses must
    /// be known before they start (an ensemble's members name each other).
    pub fn listen(mut self, addr: SocketAddr) -> ServerBuilder {
        self.listen = addr;
        self
    }

    /// Serves ZooKeeper clients too, on a free 127.0.0.1 port ([`ServerProcess::zk_addr`]).
    pub fn zookeeper(self) -> ServerBuilder {
        self.zk_listen(any_port())
    }

    /// Serves ZooKeeper clients on `addr`.
    pub fn zk_listen(mut self, addr: SocketAddr) -> ServerBuilder {
        self.zk_listen = Some(addr);
        self
    }

    /// Serves ZooKeeper clients over TLS too (ZooKeeper's secure client port), on a free
    /// 127.0.0.1 port ([`ServerProcess::zk_tls_addr`]); the test's flags give the
    /// certificate (`--tls-cert`, `--tls-key`).
    pub fn zk_tls(mut self) -> ServerBuilder {
        self.zk_tls_listen = Some(any_port());
        self
    }

    /// Serves the admin HTTP listener too, on a free 127.0.0.1 port
    /// ([`ServerProcess::admin_addr`]).
    pub fn admin(mut self) -> ServerBuilder {
        self.admin_listen = Some(any_port());
        self
    }

    /// Keeps nothing on disk (`--in-memory`) instead of a data directory of its own.
    pub fn in_memory(mut self) -> ServerBuilder {
        self.in_memory = true;
        self
    }

    /// Starts the server and waits until it listens; panics (with its stderr) if it does not.
    pub fn start(self) -> ServerProcess {
        ServerProcess::launch(self).unwrap_or_else(|why| panic!("ward-server did not start: {why}"))
    }

    /// Like [`start`](Self::start), but `Err` with the reason and the server's last words
    /// (a fixed address may be taken, say).
    pub fn try_start(self) -> Result<ServerProcess, String> {
        ServerProcess::launch(self)
    }

    /// Like [`try_start`](Self::try_start), with a [`HarnessError`].
    pub fn launch(self) -> Result<ServerProcess, HarnessError> {
        ServerProcess::launch(self).map_err(HarnessError::Start)
    }
}

fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}
