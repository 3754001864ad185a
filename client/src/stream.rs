//! Persistent watches as streams ([`Client::watch`](crate::Client::watch)), and the table
//! the connection task routes their events through.
//!
//! The server holds one persistent watch per (path, mode) for this connection and sends
//! each change it matches once ([`ServerMessage::Streamed`](ward_proto::ServerMessage)),
//! with its position (zxid, then its place among that command's changes). Here each
//! (path, mode) may feed several [`WatchStream`]s, and remembers the position of the last
//! change it matched: after a reconnect the watch is armed again *since* that position, and
//! the server's answer carries what it matched meanwhile. So a stream gets every change
//! once, in position order, across reconnects and moves between members, unless the
//! server's history no longer reaches back that far: then the stream yields
//! [`Error::EventsMissed`] where the gap is, and goes on.
//!
//! A (path, mode) takes live events only once the answer that armed it (or armed it again)
//! is in: anything the server sent before was fired before the watch was armed there, and
//! is in that answer's replay if the watch missed it.

use crate::error::Error;
use crate::sync::HashMap;
use crate::watch::batches;
use futures_util::Stream;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;
use ward_proto::{path, EventKind, PersistentWatch, Position, Response, StreamEvent, WatchEvent, WatchMode, Zxid};

/// A persistent watch: every change of its node (and, recursive, of every node below),
/// oldest first, until [`remove_watches`](crate::Client::remove_watches) ends it (the stream
/// then ends) or the session ends (it yields the error, then ends). Dropping it stops its
/// events; once every stream of a (path, mode) is dropped the server's watch is removed.
#[derive(Debug)]
pub struct WatchStream {
    rx: mpsc::UnboundedReceiver<Result<WatchEvent, Error>>,
}

type StreamSender = mpsc::UnboundedSender<Result<WatchEvent, Error>>;

impl WatchStream {
    pub(crate) fn new() -> (StreamSender, WatchStream) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, WatchStream { rx })
    }

    /// The next event; `None` once the watch is removed or the session's end was told.
    pub async fn next(&mut self) -> Option<Result<WatchEvent, Error>> {
        self.rx.recv().await
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<Result<WatchEvent, Error>> {
        self.rx.try_recv().ok()
    }
}

impl Stream for WatchStream {
    type Item = Result<WatchEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

type Key = (String, WatchMode);

struct Entry {
    senders: Vec<StreamSender>,
    /// The position of the last change this watch matched: it has every change up to here.
    last: Position,
    /// Armed on the current connection (its answer is in).
    armed: bool,
}

/// What a request about persistent watches is waiting for.
pub(crate) enum StreamWaiter {
    /// `Client::watch`: attach `tx` once armed, and hand `stream` to the caller.
    Watch {
        key: Key,
        tx: StreamSender,
        stream: WatchStream,
        reply: crate::sync::oneshot::Sender<Result<WatchStream, Error>>,
    },
    /// Watches armed again after a reconnect.
    Rearm { keys: Vec<Key> },
    /// `Client::remove_watches`.
    Remove { key: Key, reply: crate::sync::oneshot::Sender<Result<(), Error>> },
}

impl StreamWaiter {
    /// The connection was lost or the session ended before the answer.
    pub(crate) fn fail(self, error: &Error) {
        match self {
            StreamWaiter::Watch { reply, .. } => {
                let _ = reply.send(Err(error.clone()));
            }
            StreamWaiter::Remove { reply, .. } => {
                let _ = reply.send(Err(error.clone()));
            }
            // Armed again on the next connection.
            StreamWaiter::Rearm { .. } => {}
        }
    }
}

/// The application's persistent watches on this session.
#[derive(Default)]
pub(crate) struct LocalStreams {
    by_key: HashMap<Key, Entry>,
    /// Watches whose every stream was dropped: the server's watch is to be removed.
    abandoned: Vec<Key>,
}

impl LocalStreams {
    /// The request that arms a new watch.
    pub(crate) fn arm(path: String, mode: WatchMode) -> ward_proto::Request {
        ward_proto::Request::AddWatches { watches: vec![PersistentWatch { path, mode, since: None }] }
    }

    /// What to arm again on a new connection, since the last change each has matched, in
    /// requests of at most `limit` bytes of paths. Every watch waits for its answer.
    pub(crate) fn rearm(&mut self, limit: usize) -> Vec<Vec<PersistentWatch>> {
        self.by_key.retain(|_, entry| {
            entry.senders.retain(|tx| !tx.is_closed());
            entry.armed = false;
            !entry.senders.is_empty()
        });
        let watches = self.by_key.iter().map(|((path, mode), e)| PersistentWatch {
            path: path.clone(),
            mode: *mode,
            since: Some(e.last),
        });
        batches(watches, |w| w.path.len() + 16, limit)
    }

    /// Completes a request about persistent watches; `zxid` is the reply's.
    pub(crate) fn complete(&mut self, waiter: StreamWaiter, zxid: Zxid, result: Result<Response, Error>) {
        match (waiter, result) {
            (StreamWaiter::Watch { key, tx, stream, reply }, Ok(Response::WatchesAdded { .. })) => {
                let entry = self.by_key.entry(key).or_insert_with(|| Entry {
                    senders: Vec::new(),
                    // Armed in a view of the state at `zxid`: later changes fire it.
                    last: Position::after(zxid),
                    armed: true,
                });
                if !entry.armed {
                    // Its re-arm failed on this connection and this request armed it afresh:
                    // what came between is not known.
                    send(&mut entry.senders, Err(Error::EventsMissed));
                    (entry.armed, entry.last) = (true, entry.last.max(Position::after(zxid)));
                }
                entry.senders.push(tx);
                let _ = reply.send(Ok(stream));
            }
            (StreamWaiter::Rearm { keys }, Ok(Response::WatchesAdded { replay, missed })) => {
                for index in missed {
                    let Some(key) = usize::try_from(index).ok().and_then(|i| keys.get(i)) else { continue };
                    if let Some(entry) = self.by_key.get_mut(key) {
                        tracing::warn!(path = %key.0, mode = ?key.1, "a persistent watch may have missed events");
                        send(&mut entry.senders, Err(Error::EventsMissed));
                    }
                }
                for key in &keys {
                    if let Some(entry) = self.by_key.get_mut(key) {
                        entry.armed = true;
                    }
                }
                let batch: std::collections::HashSet<&Key> = keys.iter().collect();
                for event in replay {
                    self.deliver(&event, |key| batch.contains(key));
                }
            }
            (StreamWaiter::Remove { key, reply }, result) => {
                let local = self.by_key.remove(&key).is_some();
                let _ = reply.send(match result {
                    Ok(_) => Ok(()),
                    Err(Error::NoWatcher) if local => Ok(()),
                    Err(e) => Err(e),
                });
            }
            (StreamWaiter::Watch { reply, .. }, result) => {
                let _ = reply.send(result.and_then(|r| Err(crate::client::unexpected(r))));
            }
            // Armed again on the next connection, whose answer will say what was missed.
            (StreamWaiter::Rearm { keys }, result) => {
                tracing::warn!(watches = keys.len(), ?result, "re-arming persistent watches failed");
            }
        }
    }

    /// A live event: to every armed watch it matches that has not had it.
    pub(crate) fn on_event(&mut self, event: &StreamEvent) {
        self.deliver(event, |_| true);
    }

    /// Gives `event` to the watches that `eligible` allows, match it, and are behind it.
    fn deliver(&mut self, event: &StreamEvent, eligible: impl Fn(&Key) -> bool) {
        let position = event.position();
        let changed = event.event.path.as_str();
        let mut at = changed;
        loop {
            for mode in [WatchMode::Persistent, WatchMode::PersistentRecursive] {
                if !fires(mode, at == changed, event.event.kind) {
                    continue;
                }
                let key = (at.to_string(), mode);
                let Some(entry) = self.by_key.get_mut(&key) else { continue };
                if !entry.armed || position <= entry.last || !eligible(&key) {
                    continue;
                }
                entry.last = position;
                if !send(&mut entry.senders, Ok(event.event.clone())) {
                    self.by_key.remove(&key);
                    self.abandoned.push(key);
                }
            }
            if at == "/" {
                return;
            }
            at = path::parent(at);
        }
    }

    /// Watches nobody listens to any more, for the server to remove.
    pub(crate) fn take_abandoned(&mut self) -> Vec<Key> {
        std::mem::take(&mut self.abandoned)
    }

    /// The session is over: every stream learns why, then ends.
    pub(crate) fn fail_all(&mut self, error: &Error) {
        for (_, mut entry) in self.by_key.drain() {
            send(&mut entry.senders, Err(error.clone()));
        }
    }
}

/// Whether a watch of `mode` on a node that is (`at_node`) or is above the changed node
/// fires for a change of `kind` (the server's rule, ZooKeeper's `WatchManager`).
fn fires(mode: WatchMode, at_node: bool, kind: EventKind) -> bool {
    match mode {
        WatchMode::Persistent => at_node,
        WatchMode::PersistentRecursive => kind != EventKind::NodeChildrenChanged,
    }
}

/// Sends to every live stream; false if none is left.
fn send(senders: &mut Vec<StreamSender>, item: Result<WatchEvent, Error>) -> bool {
    senders.retain(|tx| tx.send(item.clone()).is_ok());
    !senders.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::oneshot;

    fn streamed(zxid: Zxid, index: u32, kind: EventKind, path: &str) -> StreamEvent {
        StreamEvent { event: WatchEvent { kind, path: path.into(), zxid }, index }
    }

    fn watch(table: &mut LocalStreams, path: &str, mode: WatchMode, zxid: Zxid) -> WatchStream {
        let (tx, stream) = WatchStream::new();
        let (reply, mut rx) = oneshot::channel();
        let waiter = StreamWaiter::Watch { key: (path.into(), mode), tx, stream, reply };
        table.complete(waiter, zxid, Ok(Response::WatchesAdded { replay: Vec::new(), missed: Vec::new() }));
        match rx.try_recv() {
            Ok(Ok(stream)) => stream,
            other => panic!("{other:?}"),
        }
    }

    fn drain(stream: &mut WatchStream) -> Vec<Result<(Zxid, String), Error>> {
        std::iter::from_fn(|| stream.try_next()).map(|r| r.map(|e| (e.zxid, e.path))).collect()
    }

    #[test]
    fn events_reach_the_watches_they_match_once_across_a_rearm() {
        let mut table = LocalStreams::default();
        let mut tree = watch(&mut table, "/a", WatchMode::PersistentRecursive, 10);
        let mut node = watch(&mut table, "/a/b", WatchMode::Persistent, 10);
        table.on_event(&streamed(9, 0, EventKind::NodeDataChanged, "/a/b"));
        table.on_event(&streamed(11, 0, EventKind::NodeCreated, "/a/b"));
        table.on_event(&streamed(11, 1, EventKind::NodeChildrenChanged, "/a"));
        assert_eq!(drain(&mut tree), [Ok((11, "/a/b".to_string()))], "before its arming, and a children change");
        assert_eq!(drain(&mut node), [Ok((11, "/a/b".to_string()))]);

        // The connection drops; both are armed again since what each has seen.
        let batches = table.rearm(1 << 17);
        let since: Vec<(String, Option<Position>)> = batches.concat().into_iter().map(|w| (w.path, w.since)).collect();
        assert_eq!(since.len(), 2);
        assert!(since.iter().all(|(_, s)| *s == Some(Position { zxid: 11, index: 0 })), "{since:?}");
        // A live event before the answer is not theirs: it fired before they were armed.
        table.on_event(&streamed(12, 0, EventKind::NodeDataChanged, "/a/b"));
        let keys =
            vec![("/a".to_string(), WatchMode::PersistentRecursive), ("/a/b".to_string(), WatchMode::Persistent)];
        let replay = vec![
            streamed(11, 0, EventKind::NodeCreated, "/a/b"),
            streamed(12, 0, EventKind::NodeDataChanged, "/a/b"),
            streamed(13, 2, EventKind::NodeDeleted, "/a/c"),
        ];
        let answer = Response::WatchesAdded { replay, missed: vec![1] };
        table.complete(StreamWaiter::Rearm { keys }, 14, Ok(answer));
        table.on_event(&streamed(13, 2, EventKind::NodeDeleted, "/a/c"));
        table.on_event(&streamed(15, 0, EventKind::NodeDeleted, "/a/b"));
        let (twelve, thirteen, fifteen) =
            ((12, "/a/b".to_string()), (13, "/a/c".to_string()), (15, "/a/b".to_string()));
        assert_eq!(drain(&mut tree), [Ok(twelve.clone()), Ok(thirteen), Ok(fifteen.clone())]);
        assert_eq!(drain(&mut node), [Err(Error::EventsMissed), Ok(twelve), Ok(fifteen)]);

        drop(node);
        table.on_event(&streamed(16, 0, EventKind::NodeCreated, "/a/b"));
        assert_eq!(table.take_abandoned(), [("/a/b".to_string(), WatchMode::Persistent)]);
        table.fail_all(&Error::SessionExpired);
        assert_eq!(drain(&mut tree), [Ok((16, "/a/b".to_string())), Err(Error::SessionExpired)]);
    }
}
