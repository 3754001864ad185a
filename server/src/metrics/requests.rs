//! Requests per listener and operation: how many were answered, how long each took from its
//! frame being decoded to its reply being queued on the connection, and which failed with
//! which code; and the bytes each listener read and wrote.
//!
//! Every figure is a preallocated atomic indexed by enums ([`Listener`], [`Op`],
//! [`Failure`]): recording a request costs a clock reading at each end, a bucket search and
//! two or three relaxed atomic additions, and never a lookup by label or an allocation.

use super::histogram::{Histogram, Latency, LATENCY_NS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use ward_proto::{ErrorCode, OpResult, Request, Response};

/// A client listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listener {
    Ward,
    ZooKeeper,
}

impl Listener {
    pub const ALL: [Listener; 2] = [Listener::Ward, Listener::ZooKeeper];

    /// The `listener` label.
    pub fn name(self) -> &'static str {
        match self {
            Listener::Ward => "ward",
            Listener::ZooKeeper => "zookeeper",
        }
    }
}

macro_rules! labelled {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $label:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($variant,)* }

        impl $name {
            /// Every value, in index order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The label value.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $label,)* }
            }
        }
    };
}

labelled!(
    /// The `op` label: Ward's request kinds, with ZooKeeper's opcodes under the same names
    /// where they do the same thing (see `zk::ops::metric_op`).
    Op {
        Create = "create",
        Delete = "delete",
        Set = "set",
        Get = "get",
        Exists = "exists",
        Children = "children",
        Multi = "multi",
        Sync = "sync",
        Ping = "ping",
        Close = "close",
        SetWatches = "set_watches",
        Lock = "lock",
        Unlock = "unlock",
        LockWait = "lock_wait",
        CheckFence = "check_fence",
        Stats = "stats",
        Members = "members",
        Reconfig = "reconfig",
        Check = "check",
        MultiRead = "multi_read",
        Acl = "acl",
        AddWatch = "add_watch",
        RemoveWatches = "remove_watches",
        Auth = "auth",
        WhoAmI = "whoami",
        ChildrenCount = "children_count",
        Ephemerals = "ephemerals",
        Other = "other",
    }
);

labelled!(
    /// The `code` label of a failed request: Ward's error codes, and the codes only a
    /// ZooKeeper read can fail with.
    Failure {
        NoNode = "no_node",
        NodeExists = "node_exists",
        BadVersion = "bad_version",
        NotEmpty = "not_empty",
        NoChildrenForEphemerals = "no_children_for_ephemerals",
        SessionExpired = "session_expired",
        BadArguments = "bad_arguments",
        Unimplemented = "unimplemented",
        RolledBack = "rolled_back",
        Unavailable = "unavailable",
        ProtocolVersion = "protocol_version",
        StaleFence = "stale_fence",
        PermitsMismatch = "permits_mismatch",
        LockContended = "lock_contended",
        OutcomeUnknown = "outcome_unknown",
        InvalidAcl = "invalid_acl",
        NoAuth = "no_auth",
        AuthFailed = "auth_failed",
        NoWatcher = "no_watcher",
        ReconfigDisabled = "reconfig_disabled",
        SystemError = "system_error",
        Other = "other",
    }
);

const OPS: usize = Op::ALL.len();
const FAILURES: usize = Failure::ALL.len();

impl Op {
    pub fn of(request: &Request) -> Op {
        match request {
            Request::Create { .. } => Op::Create,
            Request::Delete { .. } => Op::Delete,
            Request::SetData { .. } => Op::Set,
            Request::GetData { .. } => Op::Get,
            Request::Exists { .. } => Op::Exists,
            Request::GetChildren { .. } => Op::Children,
            Request::Multi(_) => Op::Multi,
            Request::Sync { .. } => Op::Sync,
            Request::Ping => Op::Ping,
            Request::CloseSession => Op::Close,
            Request::SetWatches { .. } => Op::SetWatches,
            Request::LockAcquire { .. } | Request::LockAcquireDelayed { .. } => Op::Lock,
            Request::AddWatches { .. } => Op::AddWatch,
            Request::RemoveWatches { .. } => Op::RemoveWatches,
            Request::LockRelease { .. } => Op::Unlock,
            Request::LockWait { .. } => Op::LockWait,
            Request::CheckFence { .. } => Op::CheckFence,
            Request::CreateWithAcl { .. } => Op::Create,
            Request::GetAcl { .. } | Request::SetAcl { .. } => Op::Acl,
            Request::AddAuth { .. } => Op::Auth,
            Request::Stats => Op::Stats,
            Request::Members | Request::MemberList => Op::Members,
            Request::AddMember { .. }
            | Request::AddObserver { .. }
            | Request::RemoveMember { .. }
            | Request::TransferLeader { .. } => Op::Reconfig,
            // A resent write is the same operation, asked again.
            Request::Resend(inner) => Op::of(inner),
        }
    }
}

impl From<ErrorCode> for Failure {
    fn from(code: ErrorCode) -> Failure {
        match code {
            ErrorCode::NoNode => Failure::NoNode,
            ErrorCode::NodeExists => Failure::NodeExists,
            ErrorCode::BadVersion => Failure::BadVersion,
            ErrorCode::NotEmpty => Failure::NotEmpty,
            ErrorCode::NoChildrenForEphemerals => Failure::NoChildrenForEphemerals,
            ErrorCode::SessionExpired => Failure::SessionExpired,
            ErrorCode::BadArguments => Failure::BadArguments,
            ErrorCode::Unimplemented => Failure::Unimplemented,
            ErrorCode::RolledBack => Failure::RolledBack,
            ErrorCode::Unavailable => Failure::Unavailable,
            ErrorCode::ProtocolVersion => Failure::ProtocolVersion,
            ErrorCode::StaleFence => Failure::StaleFence,
            ErrorCode::PermitsMismatch => Failure::PermitsMismatch,
            ErrorCode::LockContended => Failure::LockContended,
            ErrorCode::OutcomeUnknown => Failure::OutcomeUnknown,
            ErrorCode::NoAuth => Failure::NoAuth,
            ErrorCode::InvalidAcl => Failure::InvalidAcl,
            ErrorCode::AuthFailed => Failure::AuthFailed,
            _ => Failure::Other,
        }
    }
}

impl Failure {
    /// Whether this answer to `op` is an error worth counting. A lock acquire's `NoNode` is
    /// not: it is how the client learns that the lock directory is missing, which it then
    /// creates and asks again (client `Client::acquire_with`), so it is the first answer of
    /// every new lock, expected, and never what the caller sees.
    pub(crate) fn is_error(self, op: Op) -> bool {
        !(op == Op::Lock && self == Failure::NoNode)
    }

    /// How a write's result failed, if it did: its error, or for a multi that was rolled
    /// back, the error of the op that failed it.
    pub(crate) fn of_write(result: &Result<Response, ErrorCode>) -> Option<Failure> {
        match result {
            Err(code) => Some(Failure::from(*code)),
            Ok(Response::Multi(results)) => results.iter().find_map(|r| match r {
                OpResult::Error(ErrorCode::RolledBack) => None,
                OpResult::Error(code) => Some(Failure::from(*code)),
                _ => None,
            }),
            Ok(_) => None,
        }
    }
}

/// What a request is and when its frame was decoded; travels with it to its reply. 16
/// bytes, not an `Instant`'s 24 with the op: it is held in every connection's reader.
#[derive(Clone, Copy, Debug)]
pub struct Stamp {
    pub op: Op,
    /// Nanoseconds since the origin of the figures that stamped it
    /// ([`ListenerFigures::stamp`]).
    at_ns: u64,
}

/// One listener's figures.
#[derive(Debug)]
pub struct ListenerFigures {
    /// Per [`Op`], in nanoseconds; the count is the number of requests answered. On the
    /// heap (tens of KiB in all): a server's figures are built once, and never on a small
    /// stack.
    latency: Box<[Latency]>,
    errors: Box<[[AtomicU64; FAILURES]]>,
    /// Extremes over every op, for ZooKeeper's `mntr` (`u64::MAX`: none yet).
    min_ns: AtomicU64,
    max_ns: AtomicU64,
    /// Messages the server sent unasked: watch events, lock grants, session ends.
    pub pushed: AtomicU64,
    pub bytes_in: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    /// The origin of this listener's stamps, on the monotonic clock.
    origin: Instant,
}

impl Default for ListenerFigures {
    fn default() -> Self {
        Self::new()
    }
}

impl ListenerFigures {
    pub fn new() -> Self {
        ListenerFigures {
            latency: (0..OPS).map(|_| Histogram::new(&LATENCY_NS)).collect(),
            errors: (0..OPS).map(|_| [const { AtomicU64::new(0) }; FAILURES]).collect(),
            min_ns: AtomicU64::new(u64::MAX),
            max_ns: AtomicU64::new(0),
            pushed: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            origin: Instant::now(),
        }
    }

    /// A request of `op` whose frame was decoded now; its reply is counted here.
    pub fn stamp(&self, op: Op) -> Stamp {
        Stamp { op, at_ns: self.since_origin_ns() }
    }

    fn since_origin_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The reply to the request stamped `stamp` is queued; it failed with `failure`, if set
    /// and if it is an error ([`Failure::is_error`]).
    pub fn answered(&self, stamp: Stamp, failure: Option<Failure>) {
        let ns = self.since_origin_ns().saturating_sub(stamp.at_ns);
        self.latency[stamp.op as usize].observe(ns);
        if let Some(failure) = failure.filter(|f| f.is_error(stamp.op)) {
            self.errors[stamp.op as usize][failure as usize].fetch_add(1, Ordering::Relaxed);
        }
        // Loads first: the extremes rarely move, and a read does not take the cache line.
        if ns < self.min_ns.load(Ordering::Relaxed) {
            self.min_ns.fetch_min(ns, Ordering::Relaxed);
        }
        if ns > self.max_ns.load(Ordering::Relaxed) {
            self.max_ns.fetch_max(ns, Ordering::Relaxed);
        }
    }

    pub fn latency(&self, op: Op) -> &Latency {
        &self.latency[op as usize]
    }

    pub fn errors(&self, op: Op, failure: Failure) -> u64 {
        self.errors[op as usize][failure as usize].load(Ordering::Relaxed)
    }

    /// Requests answered, over every op.
    pub fn answered_total(&self) -> u64 {
        self.latency.iter().map(Histogram::count).sum()
    }

    /// Their latencies' sum, in nanoseconds.
    pub(crate) fn latency_sum_ns(&self) -> u64 {
        self.latency.iter().map(Histogram::sum).sum()
    }

    /// The shortest and longest latency seen, in nanoseconds, once a request was answered.
    pub(crate) fn extremes_ns(&self) -> Option<(u64, u64)> {
        let min = self.min_ns.load(Ordering::Relaxed);
        (min != u64::MAX).then(|| (min, self.max_ns.load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_values_index_their_tables() {
        assert!(Op::ALL.iter().enumerate().all(|(i, op)| *op as usize == i));
        assert!(Failure::ALL.iter().enumerate().all(|(i, f)| *f as usize == i));
    }

    #[test]
    fn a_stamp_is_small() {
        // Every connection's reader holds one across its awaits (ward-bench f counts bytes).
        assert!(std::mem::size_of::<Stamp>() <= 16);
    }

    #[test]
    fn a_failed_multi_counts_under_the_op_that_failed_it() {
        let results = vec![OpResult::Error(ErrorCode::RolledBack), OpResult::Error(ErrorCode::BadVersion)];
        assert_eq!(Failure::of_write(&Ok(Response::Multi(results))), Some(Failure::BadVersion));
        assert_eq!(Failure::of_write(&Ok(Response::Deleted)), None);
        assert_eq!(Failure::of_write(&Err(ErrorCode::NoNode)), Some(Failure::NoNode));
    }

    #[test]
    fn answers_count_per_op_with_their_failures_and_extremes() {
        let figures = ListenerFigures::new();
        assert_eq!(figures.extremes_ns(), None);
        figures.answered(figures.stamp(Op::Create), None);
        figures.answered(figures.stamp(Op::Create), Some(Failure::NodeExists));
        figures.answered(figures.stamp(Op::Get), None);
        assert_eq!(figures.latency(Op::Create).count(), 2);
        assert_eq!(figures.errors(Op::Create, Failure::NodeExists), 1);
        // A lock's missing directory is created by the client: answered, not an error.
        figures.answered(figures.stamp(Op::Lock), Some(Failure::NoNode));
        assert_eq!((figures.latency(Op::Lock).count(), figures.errors(Op::Lock, Failure::NoNode)), (1, 0));
        assert_eq!(figures.answered_total(), 4);
        let (min, max) = figures.extremes_ns().expect("answered");
        assert!(min <= max);
    }
}
