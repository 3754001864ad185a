//! Four-letter words: a connection whose first four bytes spell a command gets a text answer
//! in ZooKeeper's format, then the server closes it.

use super::stats::Shared;
use crate::metrics::{HeardFrom, Listener};
use crate::Server;
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// The version we claim: the ZooKeeper protocol we speak, then ours (tools parse the
/// leading `X.Y.Z`).
pub(crate) const VERSION: &str = concat!("3.8.0-ward-", env!("CARGO_PKG_VERSION"), ", built on 1970-01-01 00:00 UTC");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Word {
    Ruok,
    Srvr,
    Stat,
    Mntr,
    Conf,
    Cons,
    Envi,
    Wchs,
    Isro,
    /// A word ZooKeeper knows that Ward does not answer (ZooKeeper's own answer when a word
    /// is not whitelisted).
    Other([u8; 4]),
}

impl Word {
    pub(crate) fn parse(head: &[u8; 4]) -> Option<Word> {
        Some(match head {
            b"ruok" => Word::Ruok,
            b"srvr" => Word::Srvr,
            b"stat" => Word::Stat,
            b"mntr" => Word::Mntr,
            b"conf" => Word::Conf,
            b"cons" => Word::Cons,
            b"envi" => Word::Envi,
            b"wchs" => Word::Wchs,
            b"isro" => Word::Isro,
            b"crst" | b"dump" | b"gtmk" | b"stmk" | b"reqs" | b"srst" | b"wchc" | b"wchp" | b"dirs" => {
                Word::Other(*head)
            }
            _ => return None,
        })
    }
}

pub(crate) fn answer(word: Word, server: &Server, shared: &Shared) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_answer(&mut out, word, server, shared);
    out
}

/// The figures of one answer: [`Local::stats`](crate::local::Local::stats) and the ZooKeeper
/// listener's request metrics, the same numbers `/metrics` reports, plus what only
/// ZooKeeper's words show.
struct Numbers {
    stats: ward_proto::ServerStats,
    ephemerals: usize,
    data_size: u64,
    /// ZooKeeper's server state: `standalone`, `leader`, `follower` or `observer`.
    mode: &'static str,
    /// On the leader: the other members it hears from.
    heard: Option<HeardFrom>,
    /// Requests answered on this port (ZooKeeper: packets received).
    received: u64,
    /// Replies and notifications written.
    sent: u64,
    /// Request latency in milliseconds, as ZooKeeper reports it: min and max whole, the
    /// average with decimals.
    min_ms: u64,
    avg_ms: f64,
    max_ms: u64,
}

fn numbers(server: &Server) -> Numbers {
    let figures = server.local.metrics.listener(Listener::ZooKeeper);
    let received = figures.answered_total();
    let (min_ns, max_ns) = figures.extremes_ns().unwrap_or((0, 0));
    let avg_ms = match received {
        0 => 0.0,
        n => figures.latency_sum_ns() as f64 / n as f64 / 1e6,
    };
    let raft = server.replication.raft_figures();
    let mode = mode(server.replication.replicated(), raft.as_ref().map(|r| r.role));
    // A single server's group of one leads too, but ZooKeeper's standalone has no learners.
    let heard = raft.and_then(|r| r.heard).filter(|_| mode == "leader");
    server.core.read(|state| Numbers {
        stats: server.local.stats(state),
        ephemerals: state.tree().all_ephemerals().count(),
        data_size: state.tree().approximate_data_size(),
        mode,
        heard,
        received,
        sent: received + figures.pushed.load(Ordering::Relaxed),
        min_ms: min_ns / 1_000_000,
        avg_ms,
        max_ms: max_ns / 1_000_000,
    })
}

/// ZooKeeper's name for this server's part (`Mode:` in `srvr` and `stat`, `zk_server_state`
/// in `mntr`), from its Raft role. A single server is `standalone`, though it is a group of
/// one that leads. A member without a leader (a candidate) still serves reads, as a
/// follower does; ZooKeeper has no word for it that tools read. A member that does not vote
/// is ZooKeeper's observer.
fn mode(replicated: bool, role: Option<&str>) -> &'static str {
    match (replicated, role) {
        (false, _) => "standalone",
        (true, Some("leader")) => "leader",
        (true, Some("learner")) => "observer",
        (true, _) => "follower",
    }
}

fn write_answer(out: &mut String, word: Word, server: &Server, shared: &Shared) -> std::fmt::Result {
    let n = numbers(server);
    let conns = shared.connections();
    let summary = |out: &mut String| {
        writeln!(out, "Latency min/avg/max: {}/{:.4}/{}", n.min_ms, n.avg_ms, n.max_ms)?;
        writeln!(out, "Received: {}", n.received)?;
        writeln!(out, "Sent: {}", n.sent)?;
        writeln!(out, "Connections: {}", conns.len())?;
        writeln!(out, "Outstanding: 0")?;
        writeln!(out, "Zxid: {:#x}", n.stats.last_zxid)?;
        writeln!(out, "Mode: {}", n.mode)?;
        writeln!(out, "Node count: {}", n.stats.znodes)
    };
    let cons = |out: &mut String| -> std::fmt::Result {
        for c in &conns {
            let (recved, sent) = (c.received.load(Ordering::Relaxed), c.sent.load(Ordering::Relaxed));
            write!(out, " /{}[1](queued=0,recved={recved},sent={sent}", c.peer)?;
            let session = c.session.load(Ordering::Relaxed);
            if session != 0 {
                write!(
                    out,
                    ",sid={session:#x},lop=NA,est={},to={}",
                    c.established_ms,
                    c.timeout_ms.load(Ordering::Relaxed)
                )?;
                write!(
                    out,
                    ",lcxid={:#x},lzxid={:#x}",
                    c.last_cxid.load(Ordering::Relaxed),
                    c.last_zxid.load(Ordering::Relaxed)
                )?;
                write!(out, ",lresp=0,llat=0,minlat=0,avglat=0.0,maxlat=0")?;
            }
            writeln!(out, ")")?;
        }
        writeln!(out)
    };
    match word {
        Word::Ruok => write!(out, "imok"),
        Word::Isro => write!(out, "rw"),
        Word::Srvr => {
            writeln!(out, "Zookeeper version: {VERSION}")?;
            summary(out)
        }
        Word::Stat => {
            writeln!(out, "Zookeeper version: {VERSION}")?;
            writeln!(out, "Clients:")?;
            cons(out)?;
            summary(out)
        }
        Word::Cons => cons(out),
        Word::Mntr => {
            let rows: [(&str, String); 16] = [
                ("zk_version", VERSION.to_string()),
                ("zk_server_state", n.mode.into()),
                ("zk_ephemerals_count", n.ephemerals.to_string()),
                ("zk_num_alive_connections", conns.len().to_string()),
                ("zk_avg_latency", format!("{:.4}", n.avg_ms)),
                ("zk_outstanding_requests", "0".into()),
                ("zk_znode_count", n.stats.znodes.to_string()),
                ("zk_global_sessions", n.stats.sessions.to_string()),
                ("zk_packets_sent", n.sent.to_string()),
                ("zk_packets_received", n.received.to_string()),
                ("zk_watch_count", n.stats.watches.to_string()),
                ("zk_min_latency", n.min_ms.to_string()),
                ("zk_max_latency", n.max_ms.to_string()),
                ("zk_approximate_data_size", n.data_size.to_string()),
                ("zk_uptime", shared.started.elapsed().as_millis().to_string()),
                ("zk_local_sessions", "0".into()),
            ];
            rows.iter().try_for_each(|(k, v)| writeln!(out, "{k}\t{v}"))?;
            match n.heard {
                Some(heard) => leader_rows(out, heard),
                None => Ok(()),
            }
        }
        Word::Conf => {
            let ms = |d: std::time::Duration| d.as_millis();
            writeln!(out, "clientPort={}", shared.addr.port())?;
            writeln!(out, "secureClientPort=-1")?;
            writeln!(out, "tickTime=2000")?;
            writeln!(out, "maxClientCnxns={}", server.config.max_connections_per_ip)?;
            writeln!(out, "minSessionTimeout={}", ms(server.config.min_session_timeout))?;
            writeln!(out, "maxSessionTimeout={}", ms(server.config.max_session_timeout))?;
            writeln!(out, "clientPortListenBacklog=-1")?;
            writeln!(out, "serverId=0")
        }
        Word::Envi => {
            writeln!(out, "Environment:")?;
            writeln!(out, "zookeeper.version={VERSION}")?;
            writeln!(out, "host.name={}", shared.addr.ip())?;
            writeln!(out, "os.name={}", std::env::consts::OS)?;
            writeln!(out, "os.arch={}", std::env::consts::ARCH)?;
            let dir = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default();
            writeln!(out, "user.dir={dir}")
        }
        Word::Wchs => {
            let (watching, paths, watches) = server.local.watches.summary();
            writeln!(out, "{watching} connections watching {paths} paths")?;
            writeln!(out, "Total watches:{watches}")
        }
        Word::Other(word) => {
            writeln!(out, "{} is not executed because it is not in the whitelist.", String::from_utf8_lossy(&word))
        }
    }
}

/// The rows only a leader's `mntr` has, for the members it has heard from within its lease:
/// ZooKeeper 3.6 and later name them `zk_learners`, `zk_synced_followers` and
/// `zk_synced_non_voting_followers`; 3.4's `zk_followers` (every learner), which older tools
/// read, is given as well. `zk_pending_syncs` is left out: Ward keeps no such queue.
fn leader_rows(out: &mut String, heard: HeardFrom) -> std::fmt::Result {
    let learners = heard.voters + heard.learners;
    writeln!(out, "zk_learners\t{learners}")?;
    writeln!(out, "zk_followers\t{learners}")?;
    writeln!(out, "zk_synced_followers\t{}", heard.voters)?;
    writeln!(out, "zk_synced_non_voting_followers\t{}", heard.learners)
}

#[cfg(test)]
mod tests {
    use super::mode;

    /// docs/zookeeper-compat.md, "Four-letter words": the mode ZooKeeper's tools parse.
    #[test]
    fn a_member_says_its_part_as_zookeeper_names_it() {
        assert_eq!(mode(false, Some("leader")), "standalone", "a single server, a group of one");
        assert_eq!(mode(false, None), "standalone");
        assert_eq!(mode(true, Some("leader")), "leader");
        assert_eq!(mode(true, Some("follower")), "follower");
        assert_eq!(mode(true, Some("candidate")), "follower");
        assert_eq!(mode(true, Some("learner")), "observer");
    }
}
