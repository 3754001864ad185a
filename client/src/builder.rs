//! Connecting: addresses, session timeout, connect timeout, TLS.

use crate::client::{Client, Inner};
use crate::conn::dial::{dial, Connection, DialError};
use crate::conn::task::Task;
use crate::error::{Error, Result};
use crate::state::{SessionCell, SessionState};
use crate::tls::Tls;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use ward_proto::{Credentials, ErrorCode, Hello};

/// Settings for a new [`Client`]. Start from [`Client::builder`].
#[derive(Clone, Debug)]
pub struct ClientBuilder {
    addrs: String,
    session_timeout: Duration,
    connect_timeout: Duration,
    owner: Option<String>,
    tls: Option<Tls>,
    /// Shown with `AddAuth` once connected; `Credentials`' `Debug` hides them.
    auth: Vec<(String, Credentials)>,
}

impl ClientBuilder {
    pub(crate) fn new(addrs: &str) -> Self {
        ClientBuilder {
            addrs: addrs.to_string(),
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            owner: None,
            tls: None,
            auth: Vec::new(),
        }
    }

    /// Connects over TLS (docs/security.md "TLS"): to servers started with `--tls-cert`,
    /// which then speak nothing else.
    pub fn tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The session timeout to ask for (default 10 s); the server clamps it into its range.
    /// If the server hears nothing from this client for that long, the session expires and
    /// its ephemeral nodes are deleted.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long connecting may take (default 5 s): one attempt to reach one server, and all
    /// attempts while servers answer that they cannot serve yet.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// A stable name for this application instance. Opening a session with an owner name
    /// ends the previous session of the same owner at once (its ephemerals and locks are
    /// released), as a service restarted after `kill -9` needs instead of waiting out its old
    /// session's timeout. Give each instance its own name.
    pub fn owner(mut self, name: &str) -> Self {
        self.owner = Some(name.to_string());
        self
    }

    /// Credentials to authenticate with as soon as the session is open, and again on every
    /// reconnect (ZooKeeper's `addAuth`): for the `digest` scheme, `user:password`. The
    /// connect fails with [`Error::AuthFailed`] if the server cannot authenticate the scheme.
    /// May be given more than once.
    pub fn auth(mut self, scheme: &str, credentials: impl AsRef<[u8]>) -> Self {
        self.auth.push((scheme.to_string(), Credentials(credentials.as_ref().to_vec())));
        self
    }

    /// Opens a session on a server of the list that answers, starting from a random one so
    /// that the clients of an ensemble spread over its members; on connection loss the
    /// client moves on through the list.
    pub async fn connect(self) -> Result<Client> {
        let mut addrs: Vec<String> =
            self.addrs.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect();
        if addrs.is_empty() {
            return Err(Error::BadArguments(format!("no server address in {:?}", self.addrs)));
        }
        let start = random_below(addrs.len());
        addrs.rotate_left(start);
        let requested_timeout_ms = u32::try_from(self.session_timeout.as_millis()).unwrap_or(u32::MAX);
        let (index, conn, hello_sent) = self.first_welcome(&addrs, requested_timeout_ms).await?;
        let welcome = conn.welcome.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        let (state_tx, state_rx) = watch::channel(SessionState::Connected);
        let session = crate::sync::Arc::new(SessionCell::new());
        let timeout = Duration::from_millis(u64::from(welcome.timeout_ms));
        let task = Task {
            addrs: addrs.clone(),
            next_addr: index + 1,
            session_id: welcome.session_id,
            secret: welcome.secret,
            requested_timeout_ms,
            timeout,
            connect_timeout: self.connect_timeout,
            tls: self.tls.clone(),
            last_zxid: 0,
            next_xid: 1,
            pending: Default::default(),
            watches: Default::default(),
            streams: Default::default(),
            state: state_tx,
            session: session.clone(),
            // A welcome counts as a pong for the hello (the server confirms first).
            last_ack: hello_sent,
            locks: Default::default(),
            resend: Vec::new(),
            auth: Vec::new(),
            rx,
        };
        tokio::spawn(task.run(conn));
        let inner = Inner {
            tx,
            state: state_rx,
            session,
            session_id: welcome.session_id,
            timeout,
            next_tag: AtomicU64::new(1),
            mutexes: Default::default(),
            runtime: tokio::runtime::Handle::current(),
        };
        let client = Client { inner: Arc::new(inner) };
        for (scheme, credentials) in self.auth {
            if let Err(e) = client.add_auth(&scheme, &credentials.0).await {
                let _ = client.close().await;
                return Err(e);
            }
        }
        Ok(client)
    }

    /// Dials the listed servers in turn until one welcomes a new session. A server that
    /// answers "unavailable" (an ensemble member not yet in contact with a leader, say) is
    /// tried again, with the others, until the connect timeout has passed; when every
    /// server is unreachable or refuses for good, the error comes at once.
    async fn first_welcome(
        &self,
        addrs: &[String],
        requested_timeout_ms: u32,
    ) -> Result<(usize, Connection, tokio::time::Instant)> {
        let deadline = tokio::time::Instant::now() + self.connect_timeout;
        let mut pause = Duration::from_millis(50);
        loop {
            let mut failures = Vec::new();
            let mut unavailable = false;
            // A certificate refused is a setting to fix, not a server to wait for: said
            // first, in words, when no server welcomes us.
            let mut certificate = None;
            for (index, addr) in addrs.iter().enumerate() {
                let hello = Hello { owner: self.owner.clone(), ..Hello::new(None, requested_timeout_ms, 0) };
                let hello_sent = tokio::time::Instant::now();
                let limit = self.connect_timeout.min(deadline.saturating_duration_since(hello_sent));
                match dial(addr, hello, limit.max(Duration::from_millis(1)), self.tls.as_ref()).await {
                    Ok(conn) => return Ok((index, conn, hello_sent)),
                    Err(DialError::Unreachable(why)) => failures.push(why),
                    Err(DialError::Certificate(server, problem)) => {
                        failures.push(format!("{server}: TLS: {problem}"));
                        certificate.get_or_insert(Error::Certificate { server, problem });
                    }
                    Err(DialError::Refused(ErrorCode::ProtocolVersion, why)) => {
                        return Err(Error::ProtocolVersion(why))
                    }
                    Err(DialError::Refused(code, why)) => {
                        unavailable |= code == ErrorCode::Unavailable;
                        failures.push(format!("{addr}: refused ({code:?}): {why}"));
                    }
                }
            }
            if !unavailable || tokio::time::Instant::now() + pause >= deadline {
                return Err(certificate.unwrap_or_else(|| Error::Connect(failures.join("; "))));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }
}

/// A number below `n` that differs between processes and calls: std's hasher keys are
/// random per `RandomState`, which is randomness enough to spread connections.
fn random_below(n: usize) -> usize {
    use std::hash::{BuildHasher, Hasher};
    let hash = std::collections::hash_map::RandomState::new().build_hasher().finish();
    usize::try_from(hash % n.max(1) as u64).unwrap_or(0)
}
