//! `--snapshots`: what a snapshot of a large tree costs the writers, in process and with no
//! server. A state machine is filled with N znodes of 100 bytes under one directory (as
//! workload g fills the server's), and then, for each way of taking a snapshot:
//!
//! - **serialize under the lock**: the state serialized whole (what the server did before:
//!   writes waited for all of it);
//! - **deep copy**: a full clone of the state (a cheap copy taken under the lock, serialized
//!   outside it, without shared structure);
//! - **shared copy**: the copy the server takes now (the tree's pieces are shared,
//!   copy-on-write: chunks of the node slab, shards of the index and of the child lists),
//!   and serializing that copy, outside the lock;
//! - **first writes after the copy**: a create under the big directory copies the pieces it
//!   changes, the directory's child list with them, once per snapshot; a create elsewhere
//!   copies pieces of nodes alone. Then the same creates again, with nothing to copy.
//!
//! Memory: this process's RSS growth per znode while filling, which is the tree alone (no
//! connections, no log).

use crate::report::{Results, WARD};
use crate::stats::Figures;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use ward_proto::{CreateMode, Op, SessionId, SessionSecret, Stat};
use ward_server::command::{Command, CommandOp};
use ward_server::state::StateMachine;

pub fn run(results: &mut Results, quick: bool) {
    let sizes: &[usize] = if quick { &[20_000] } else { &[100_000, 1_000_000] };
    for &n in sizes {
        let figures = measure(n);
        let title = format!("snapshot of {}k znodes (in process)", n / 1000);
        eprintln!("  {title:<40} done");
        results.record(&title, WARD, &figures);
    }
}

fn cmd(xid: u64, op: CommandOp) -> Command {
    Command { time_ms: 1, session: SessionId(1), xid, op }
}

fn measure(n: usize) -> Figures {
    let rss = || crate::procinfo::rss_bytes(std::process::id()).unwrap_or(0);
    let before = rss();
    let mut state = StateMachine::default();
    let open = CommandOp::CreateSession { timeout_ms: 10_000, secret: SessionSecret([1; 16]), owner: None };
    state.apply_command(&cmd(0, open));
    let create = |path: String| CommandOp::Op(Op::Create { path, data: vec![b'w'; 100], mode: CreateMode::Persistent });
    state.apply_command(&cmd(0, create("/g".into())));
    state.apply_command(&cmd(0, create("/other".into())));
    let filled = Instant::now();
    for i in 0..n {
        state.apply_command(&cmd(0, create(format!("/g/n{i:07}"))));
    }
    let fill = filled.elapsed();
    let grown = rss().saturating_sub(before);
    let mut f = Figures::default();
    f.rate("create/s (apply alone)", n, fill);
    f.add("RSS per znode (B)", grown as f64 / n as f64);

    let timed = |what: &str, f: &mut Figures, work: &mut dyn FnMut() -> usize| {
        let t0 = Instant::now();
        let out = work();
        f.add(format!("{what} (ms)"), ms(t0.elapsed()));
        out
    };
    // The server's way first: a mass of frees (as a deep copy's drop) would make the
    // allocator's next large request slow, and the figures below with it.
    let mut copy = None;
    timed("shared copy under the lock (now)", &mut f, &mut || {
        copy = Some(state.clone());
        0
    });
    let copy = copy.unwrap_or_default();
    timed("first create in the big directory after the copy", &mut f, &mut || {
        state.apply_command(&cmd(0, create("/g/after-0".into())));
        0
    });
    // Creates in fresh places until 32 of them have each copied a piece of their own.
    let t0 = Instant::now();
    let mut copied = 0;
    for i in 0..10_000 {
        let shared_before = state.tree().shared_shards(copy.tree());
        state.apply_command(&cmd(0, create(format!("/other/after-{i}"))));
        copied += usize::from(state.tree().shared_shards(copy.tree()) < shared_before);
        if copied == 32 {
            break;
        }
    }
    f.add("a create that copies a piece, mean (ms)", ms(t0.elapsed()) / copied.max(1) as f64);
    let t0 = Instant::now();
    for i in 1..=100 {
        state.apply_command(&cmd(0, create(format!("/g/after-{i}"))));
    }
    f.add("a create in the big directory once copied, mean (ms)", ms(t0.elapsed()) / 100.0);
    let written = timed("serialize the copy, outside the lock (now)", &mut f, &mut || {
        postcard::to_io(&copy, Counter(0)).map_or(0, |c| c.0)
    });
    drop(copy);
    let bytes = timed("serialize under the lock (before)", &mut f, &mut || {
        postcard::to_allocvec(&state).map_or(0, |v| v.len())
    });
    f.add("snapshot size (MB)", bytes as f64 / 1e6);
    f.add("serialized copy size (MB)", written as f64 / 1e6);
    let mut deep = HashMap::new();
    timed("deep copy under the lock", &mut f, &mut || {
        deep = deep_copy(&state);
        deep.len()
    });
    drop(deep);
    f
}

/// A sink that counts what is written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A node as a copy that shares nothing holds it: its data, stat and child names.
type Copied = (Box<[u8]>, Stat, Vec<Box<str>>);

/// A copy of the tree that shares nothing, as cloning it cost before it was sharded: every
/// node (its data, stat and child list) and its path, into one table.
fn deep_copy(state: &StateMachine) -> HashMap<Box<str>, Copied> {
    let tree = state.tree();
    let mut copy: HashMap<Box<str>, Copied> = HashMap::with_capacity(tree.len());
    let mut stack = vec![String::from("/")];
    while let Some(path) = stack.pop() {
        let Some(node) = tree.get(&path) else { continue };
        stack.extend(node.children.iter().map(|child| ward_proto::path::join(&path, child)));
        let children = node.children.iter().map(Box::from).collect();
        copy.insert(path.into_boxed_str(), (node.data().into(), tree.stat(node), children));
    }
    copy
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
