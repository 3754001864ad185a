//! Lock attempts and releases the connection task keeps alive across reconnects.
//!
//! A grant is addressed by contender path, and the path can reach us before the reply to
//! the acquire that created it; so attempts are keyed by the client's tag, which the path
//! carries (see [`ward_proto::lock`]). Releases are kept until the server acknowledges them
//! and re-sent after a reconnect: a guard dropped while disconnected still releases.

use crate::error::Error;
use crate::sync::oneshot;
use crate::sync::HashMap;
use ward_proto::lock::parse_contender;
use ward_proto::path;

pub(crate) type GrantSender = oneshot::Sender<Result<(), Error>>;
pub(crate) type DoneSender = oneshot::Sender<Result<(), Error>>;

struct Attempt {
    /// Known once the acquire is answered (or a grant names it).
    path: Option<String>,
    granted: GrantSender,
}

#[derive(Default)]
pub(crate) struct LockTable {
    attempts: HashMap<u64, Attempt>,
    /// Releases not yet acknowledged: tag → (dirs, who waits for the acknowledgement).
    releases: HashMap<u64, (Vec<String>, Vec<DoneSender>)>,
}

impl LockTable {
    /// Registers (or re-registers, for a retry) an attempt before its acquire is sent.
    pub(crate) fn attempt(&mut self, tag: u64, granted: GrantSender) {
        let path = self.attempts.remove(&tag).and_then(|a| a.path);
        self.attempts.insert(tag, Attempt { path, granted });
    }

    /// The acquire was answered: remember the path, and grant at once if it holds.
    pub(crate) fn answered(&mut self, tag: u64, path: &str, held: bool) {
        if held {
            self.grant(tag, Ok(()));
        } else if let Some(attempt) = self.attempts.get_mut(&tag) {
            attempt.path = Some(path.to_string());
        }
    }

    pub(crate) fn grant(&mut self, tag: u64, result: Result<(), Error>) {
        if let Some(attempt) = self.attempts.remove(&tag) {
            let _ = attempt.granted.send(result);
        }
    }

    /// A `LockGranted` message: find the attempt by the tag inside the contender's name.
    pub(crate) fn granted_path(&mut self, contender: &str) {
        if let Some((_, tag)) = parse_contender(path::name(contender)) {
            self.grant(tag, Ok(()));
        }
    }

    /// Attempts whose grant may have been sent while we were disconnected.
    pub(crate) fn waiting_paths(&self) -> Vec<(u64, String)> {
        self.attempts.iter().filter_map(|(tag, a)| a.path.clone().map(|p| (*tag, p))).collect()
    }

    pub(crate) fn release(&mut self, tag: u64, dirs: Vec<String>, done: Option<DoneSender>) {
        self.attempts.remove(&tag);
        let entry = self.releases.entry(tag).or_insert_with(|| (dirs, Vec::new()));
        entry.1.extend(done);
    }

    pub(crate) fn released(&mut self, tag: u64, result: Result<(), Error>) {
        if let Some((_, waiters)) = self.releases.remove(&tag) {
            for w in waiters {
                let _ = w.send(result.clone());
            }
        }
    }

    pub(crate) fn pending_releases(&self) -> Vec<(u64, Vec<String>)> {
        self.releases.iter().map(|(tag, (dirs, _))| (*tag, dirs.clone())).collect()
    }

    /// The session is over: attempts fail; releases succeed (the session's nodes are gone).
    pub(crate) fn session_over(&mut self, error: &Error) {
        for (_, attempt) in self.attempts.drain() {
            let _ = attempt.granted.send(Err(error.clone()));
        }
        let tags: Vec<u64> = self.releases.keys().copied().collect();
        for tag in tags {
            self.released(tag, Ok(()));
        }
    }
}
