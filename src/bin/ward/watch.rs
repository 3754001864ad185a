//! `ward watch PATH` and `ward get -w PATH`: changes as one line per event.
//!
//! Ward's watches fire once (ZooKeeper's model). `watch` keeps, for every node it follows,
//! what it last read (creation zxid, version, children) and a watch armed by that same
//! read; when a watch fires it reads the node again, arming a new watch with the read, and
//! reports the difference. A change made between the firing and the new read is in the
//! read, and any change after it fires the new watch, so nothing is lost; several quick
//! changes of one node can come out as one event (its version tells how many sets).

use crate::commands::{ward, Failure};
use crate::nodes::print_data;
use crate::output::{warn, Out};
use crate::signals::Signals;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use tokio::sync::mpsc;
use ward_client::{Client, Error, EventKind, Stat, Watch, WatchEvent};
use ward_proto::{path, Zxid};

/// `--recursive` follows at most this many nodes; the rest of the tree is not watched.
const MAX_NODES: usize = 10_000;

/// One reported change.
struct Event<'a> {
    kind: &'static str,
    path: &'a str,
    zxid: Option<Zxid>,
    version: Option<i32>,
}

impl Event<'_> {
    /// `KIND PATH [zxid=N] [version=N]`, or `{"type", "path", "zxid", "version"}` (null when
    /// not known).
    fn print(&self, out: Out) -> Result<(), Failure> {
        if out.json() {
            return out
                .value(&json!({"type": self.kind, "path": self.path, "zxid": self.zxid, "version": self.version}));
        }
        let mut line = format!("{} {}", self.kind, self.path);
        if let Some(zxid) = self.zxid {
            line.push_str(&format!(" zxid={zxid}"));
        }
        if let Some(version) = self.version {
            line.push_str(&format!(" version={version}"));
        }
        out.line(&line)
    }
}

fn kind_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::NodeCreated => "created",
        EventKind::NodeDataChanged => "changed",
        EventKind::NodeDeleted => "deleted",
        EventKind::NodeChildrenChanged => "children-changed",
    }
}

/// `get -w`: the data, then the next change of the node.
pub async fn get_and_wait(client: &Client, path: &str, out: Out, mut signals: Signals) -> Result<(), Failure> {
    let (data, stat, watch) = client.get_data_watch(path).await.map_err(ward(format!("get {path}")))?;
    print_data(path, &data, &stat, out)?;
    let event = tokio::select! {
        fired = watch => fired.map_err(ward(format!("watch {path}")))?,
        _ = signals.recv() => return Ok(()),
    };
    Event { kind: kind_name(event.kind), path: &event.path, zxid: Some(event.zxid), version: None }.print(out)
}

/// What `watch` last read of a node that exists.
struct Seen {
    czxid: Zxid,
    version: i32,
    /// Its children, if `watch` lists them.
    children: Option<BTreeSet<String>>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Armed {
    Data,
    Child,
}

type Fired = (Armed, String, Result<WatchEvent, Error>);

/// `watch PATH`: PATH's own changes and its children's creation and deletion, and with
/// `depth` Some(1) (`--children`) or None (`--recursive`) the changes of the nodes that
/// many levels below, until interrupted.
pub async fn stream(
    client: &Client,
    root: &str,
    depth: Option<usize>,
    out: Out,
    mut signals: Signals,
) -> Result<(), Failure> {
    let (fired_tx, mut fired) = mpsc::unbounded_channel();
    let mut watcher = Watcher {
        client,
        root: root.to_owned(),
        depth,
        out,
        nodes: BTreeMap::new(),
        armed: HashSet::new(),
        fired_tx,
        deleted_at: None,
        warned_limit: false,
    };
    watcher.refresh(root, true).await?;
    let scope = match depth {
        Some(0) => "and its children",
        Some(_) => "and its children's changes",
        None => "and every node below it",
    };
    warn(format!("watching {root} {scope}; interrupt to stop"));
    loop {
        let (armed, path, result) = tokio::select! {
            next = fired.recv() => next.ok_or(Failure::Lost(client.state()))?,
            _ = signals.recv() => return Ok(()),
        };
        let event = result.map_err(ward(format!("watch {path}")))?;
        watcher.armed.remove(&(armed, path.clone()));
        if event.kind == EventKind::NodeDeleted {
            watcher.deleted_at = Some((event.path.clone(), event.zxid));
        }
        watcher.refresh(&path, false).await?;
        watcher.deleted_at = None;
    }
}

struct Watcher<'a> {
    client: &'a Client,
    root: String,
    /// How many levels below the root have their own changes reported (None: all).
    depth: Option<usize>,
    out: Out,
    /// The followed nodes that exist.
    nodes: BTreeMap<String, Seen>,
    /// Watches armed and not fired yet: a node is read again without a new watch.
    armed: HashSet<(Armed, String)>,
    fired_tx: mpsc::UnboundedSender<Fired>,
    /// The delete that fired the watch being handled: its zxid is the deleted node's.
    deleted_at: Option<(String, Zxid)>,
    warned_limit: bool,
}

impl Watcher<'_> {
    fn level(&self, node: &str) -> usize {
        let below = node.strip_prefix(self.root.as_str()).unwrap_or(node);
        below.split('/').filter(|part| !part.is_empty()).count()
    }

    /// Whether nodes `level` below the root are followed (their own changes reported).
    fn follows(&self, level: usize) -> bool {
        self.depth.is_none_or(|depth| level <= depth)
    }

    /// Whether the children of a followed node `level` below the root are listed (the root's
    /// always: their creation and deletion is news about the root).
    fn lists(&self, level: usize) -> bool {
        level == 0 || self.depth.is_none_or(|depth| level < depth)
    }

    /// Reads `start` (and the nodes that appeared below it) again and reports what changed.
    /// `initial`: the first read, which reports nothing.
    async fn refresh(&mut self, start: &str, initial: bool) -> Result<(), Failure> {
        let mut todo = vec![start.to_owned()];
        while let Some(node) = todo.pop() {
            self.refresh_one(&node, initial, &mut todo).await?;
        }
        Ok(())
    }

    async fn refresh_one(&mut self, node: &str, initial: bool, todo: &mut Vec<String>) -> Result<(), Failure> {
        let level = self.level(node);
        let parent_lists = self.nodes.get(path::parent(node)).is_some_and(|p| p.children.is_some());
        if node != self.root && !(parent_lists && self.follows(level)) {
            // A watch left from before the node stopped being followed.
            return Ok(());
        }
        let watch_pending = self.armed.contains(&(Armed::Data, node.to_owned()));
        let stat = self.read(node).await?;
        let seen = self.nodes.get(node).map(|s| (s.czxid, s.version));
        match (seen, stat) {
            (None, None) => return Ok(()),
            // Its data watch fires for the delete: that event reports it, with its zxid.
            (Some(_), None) if watch_pending => return Ok(()),
            (Some(_), None) => return self.gone(node),
            (Some((czxid, _)), Some(stat)) if czxid != stat.czxid => {
                self.gone(node)?;
                self.appeared(node, &stat, initial)?;
            }
            (None, Some(stat)) => self.appeared(node, &stat, initial)?,
            (Some((_, version)), Some(stat)) if version != stat.version => {
                Event { kind: "changed", path: node, zxid: Some(stat.mzxid), version: Some(stat.version) }
                    .print(self.out)?;
                if let Some(seen) = self.nodes.get_mut(node) {
                    seen.version = stat.version;
                }
            }
            (Some(_), Some(_)) => {}
        }
        if self.lists(level) {
            self.list(node, level, initial, todo).await?;
        }
        Ok(())
    }

    /// The node's stat, arming its data watch unless one is armed. The root is read with
    /// `exists`, whose watch also fires when a missing root is created; other nodes with
    /// `get_data`, which arms nothing on a missing node.
    async fn read(&mut self, node: &str) -> Result<Option<Stat>, Failure> {
        let what = || ward(format!("watch {node}"));
        if self.armed.contains(&(Armed::Data, node.to_owned())) {
            return self.client.exists(node).await.map_err(what());
        }
        let (stat, watch) = if node == self.root {
            self.client.exists_watch(node).await.map_err(what())?
        } else {
            match self.client.get_data_watch(node).await {
                Ok((_, stat, watch)) => (Some(stat), watch),
                Err(Error::NoNode) => return Ok(None),
                Err(error) => return Err(what()(error)),
            }
        };
        self.arm(Armed::Data, node, watch);
        Ok(stat)
    }

    fn arm(&mut self, armed: Armed, node: &str, watch: Watch) {
        self.armed.insert((armed, node.to_owned()));
        let (tx, node) = (self.fired_tx.clone(), node.to_owned());
        tokio::spawn(async move {
            let _ = tx.send((armed, node, watch.await));
        });
    }

    /// Lists `node`'s children (arming its child watch unless one is armed) and reports
    /// the ones that came and went.
    async fn list(&mut self, node: &str, level: usize, initial: bool, todo: &mut Vec<String>) -> Result<(), Failure> {
        let listed = if self.armed.contains(&(Armed::Child, node.to_owned())) {
            self.client.get_children(node).await
        } else {
            self.client.get_children_watch(node).await.map(|(children, watch)| {
                self.arm(Armed::Child, node, watch);
                children
            })
        };
        let now: BTreeSet<String> = match listed {
            Ok(children) => children.into_iter().collect(),
            // Deleted since we read it: its data watch reports that.
            Err(Error::NoNode) => return Ok(()),
            Err(error) => return Err(ward(format!("watch {node}"))(error)),
        };
        let Some(seen) = self.nodes.get_mut(node) else { return Ok(()) };
        let before = seen.children.replace(now.clone()).unwrap_or_default();
        for name in before.difference(&now) {
            self.child_gone(&path::join(node, name))?;
        }
        for name in now.difference(&before) {
            let child = path::join(node, name);
            if self.follows(level + 1) && self.nodes.len() < MAX_NODES {
                todo.push(child);
                continue;
            }
            if self.follows(level + 1) && !self.warned_limit {
                self.warned_limit = true;
                warn(format!("following {MAX_NODES} nodes already; new ones are reported but not watched"));
            }
            if !initial {
                let stat = self.client.exists(&child).await.map_err(ward(format!("watch {child}")))?;
                let (zxid, version) = (stat.map(|s| s.czxid), stat.map(|s| s.version));
                Event { kind: "created", path: &child, zxid, version }.print(self.out)?;
            }
        }
        Ok(())
    }

    fn appeared(&mut self, node: &str, stat: &Stat, initial: bool) -> Result<(), Failure> {
        self.nodes.insert(node.to_owned(), Seen { czxid: stat.czxid, version: stat.version, children: None });
        if initial {
            return Ok(());
        }
        Event { kind: "created", path: node, zxid: Some(stat.czxid), version: Some(stat.version) }.print(self.out)
    }

    /// `node` no longer exists: reports it and every node known below it, deepest first.
    fn gone(&mut self, node: &str) -> Result<(), Failure> {
        let below = |other: &str| other == node || other.strip_prefix(node).is_some_and(|rest| rest.starts_with('/'));
        let below_root = |other: &str| node == "/" && other != "/";
        let doomed: Vec<String> = self.nodes.keys().filter(|k| below(k) || below_root(k)).cloned().collect();
        for gone in doomed.iter().rev() {
            let Some(seen) = self.nodes.remove(gone) else { continue };
            for name in seen.children.unwrap_or_default() {
                let child = path::join(gone, &name);
                if !self.nodes.contains_key(&child) {
                    self.report_deleted(&child)?;
                }
            }
            self.report_deleted(gone)?;
        }
        if let Some(parent) = self.nodes.get_mut(path::parent(node)) {
            if let Some(children) = parent.children.as_mut() {
                children.remove(path::name(node));
            }
        }
        Ok(())
    }

    /// A listed child is no longer there.
    fn child_gone(&mut self, child: &str) -> Result<(), Failure> {
        if self.nodes.contains_key(child) {
            if self.armed.contains(&(Armed::Data, child.to_owned())) {
                // Reported when its own watch fires for the delete, with the zxid.
                return Ok(());
            }
            return self.gone(child);
        }
        self.report_deleted(child)
    }

    fn report_deleted(&mut self, node: &str) -> Result<(), Failure> {
        let zxid = self.deleted_at.as_ref().filter(|(path, _)| path == node).map(|(_, zxid)| *zxid);
        Event { kind: "deleted", path: node, zxid, version: None }.print(self.out)
    }
}
