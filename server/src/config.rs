//! Server settings.

use crate::error::Error;
use crate::tls::ServerTls;
use std::sync::Arc;
use std::time::Duration;

/// The smallest bound on a connection's queued outbound bytes: room for a burst of events
/// and one reply's worth of bookkeeping.
pub const MIN_OUTBOUND_BYTES: usize = 64 << 10;

/// What a server is allowed to do. `Default` gives ZooKeeper-like values.
#[derive(Clone, Debug)]
pub struct Config {
    /// Session timeouts asked for by clients are clamped into [min, max] (ZooKeeper: 2 and 20
    /// ticks of 2 s).
    pub min_session_timeout: Duration,
    pub max_session_timeout: Duration,
    /// Largest node data, and largest total data of one multi.
    pub max_data_len: usize,
    /// A connection that has not completed its hello by then is closed.
    pub handshake_timeout: Duration,
    /// How often session deadlines are checked. Expiry happens within one tick of the
    /// deadline.
    pub expiry_tick: Duration,
    /// Requests one connection may have waiting for their replies before the server stops
    /// reading from it (back-pressure instead of unbounded memory).
    pub max_inflight_per_conn: usize,
    /// Bytes one connection may have queued for its client (events, lock grants, read
    /// replies) but not yet written. Read replies past it make the server stop reading the
    /// connection; an event or grant past it closes the connection (the session stays).
    /// docs/security.md "Limits".
    pub max_outbound_bytes: usize,
    /// Bytes of recent changes kept for persistent watches armed again after a reconnect
    /// (G23): a client that has seen less than this history holds is told it may have
    /// missed events. docs/operations.md.
    pub watch_history_bytes: usize,
    /// Client connections (both client listeners together) open at once; 0: no limit.
    pub max_connections: usize,
    /// Client connections from one IP address (both client listeners together) open at
    /// once, as ZooKeeper's `maxClientCnxns`; 0: no limit.
    pub max_connections_per_ip: usize,
    /// A second listener speaking ZooKeeper's protocol, bound by the caller (`None`: off).
    pub zookeeper: Option<crate::zk::ZkListener>,
    /// TLS for Ward's listener, and for [`zookeeper_tls`](Self::zookeeper_tls): with it,
    /// Ward's listener speaks only TLS (docs/security.md "TLS"). `None`: plain TCP.
    pub tls: Option<Arc<ServerTls>>,
    /// ZooKeeper's secure client port: ZooKeeper's protocol over TLS (needs `tls`), bound
    /// by the caller (`None`: off).
    pub zookeeper_tls: Option<crate::zk::ZkListener>,
    /// The admin HTTP listener (`/metrics`, `/healthz`, `/readyz`), bound by the caller
    /// (`None`: off).
    pub admin: Option<crate::admin::AdminListener>,
    /// The token the web console's actions (expire a session, delete a node) ask for
    /// (`None`: actions are off). docs/console.md "Actions".
    pub admin_token: Option<crate::admin::console::AdminToken>,
    /// `/metrics` reports the lock directories with the longest queues, at most this many,
    /// so that the number of series stays bounded however many locks there are.
    pub metrics_max_locks: usize,
    /// How often the leader looks for containers and TTL nodes to delete (ZooKeeper's
    /// `znode.container.checkIntervalMs`, 60 s). A node is deleted within about one
    /// interval of becoming unused.
    pub container_check_interval: Duration,
    /// How long a container that never had a child is kept (ZooKeeper's
    /// `znode.container.maxNeverUsedIntervalMs`, 5 minutes in its latest releases); zero
    /// keeps it for good.
    pub container_max_never_used: Duration,
    /// The super user's digest (`--super-digest`): a connection that authenticates as it
    /// passes every ACL check (docs/security.md). `None`: there is no super user.
    pub super_digest: Option<crate::acl::identity::SuperDigest>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            min_session_timeout: Duration::from_secs(4),
            max_session_timeout: Duration::from_secs(40),
            max_data_len: ward_proto::MAX_DATA_LEN,
            handshake_timeout: Duration::from_secs(10),
            expiry_tick: Duration::from_millis(100),
            max_inflight_per_conn: 1024,
            max_outbound_bytes: 16 << 20,
            watch_history_bytes: crate::watch::history::HISTORY_BYTES,
            max_connections: 10_000,
            max_connections_per_ip: 60,
            zookeeper: None,
            tls: None,
            zookeeper_tls: None,
            admin: None,
            admin_token: None,
            metrics_max_locks: 100,
            container_check_interval: Duration::from_secs(60),
            container_max_never_used: Duration::from_secs(5 * 60),
            super_digest: None,
        }
    }
}

impl Config {
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |why: &str| Err(Error::Config(why.to_string()));
        if self.min_session_timeout.is_zero() || self.min_session_timeout > self.max_session_timeout {
            return bad("session timeouts need 0 < min <= max");
        }
        if self.max_session_timeout > Duration::from_millis(u64::from(u32::MAX)) {
            return bad("max session timeout is too large");
        }
        // A node must fit in a reply, which the client reads only up to its limit.
        if self.max_data_len == 0 || self.max_data_len > ward_proto::MAX_REPLY_FRAME - ward_proto::FRAME_OVERHEAD {
            return bad("max data length must be between 1 byte and 64 MiB less 64 KiB");
        }
        if self.expiry_tick.is_zero() || self.max_inflight_per_conn == 0 {
            return bad("expiry tick and in-flight limit must be positive");
        }
        if self.max_outbound_bytes < MIN_OUTBOUND_BYTES {
            return bad("max outbound bytes must be at least 64 KiB");
        }
        if self.zookeeper_tls.is_some() && self.tls.is_none() {
            return bad("the ZooKeeper TLS listener needs a TLS certificate and key");
        }
        if self.container_check_interval.is_zero() {
            return bad("the container check interval must be positive");
        }
        Ok(())
    }

    /// The largest frame a client may send: the data limit plus envelope room.
    pub(crate) fn max_frame_len(&self) -> usize {
        self.max_data_len + ward_proto::FRAME_OVERHEAD
    }

    /// The timeout a client gets for the one it asked for.
    pub(crate) fn negotiate_timeout(&self, requested_ms: u32) -> u32 {
        let ms = |d: Duration| u32::try_from(d.as_millis()).unwrap_or(u32::MAX);
        requested_ms.clamp(ms(self.min_session_timeout), ms(self.max_session_timeout))
    }
}
