//! Recovering from `SessionExpired`, with the blocking client: appends each line of stdin to
//! the znode `/demo/journal` while holding the lock `/locks/journal`, each write fenced by
//! the lock's token so that only the holder's writes land.
//!
//! A session can end under a running program: it stalled or was cut off for longer than
//! its session timeout, or another process took over its owner name. Its locks are gone
//! then and the client is of no more use (every call fails with `SessionExpired`). So the
//! program makes a new client, takes the lock again (with a larger token) and goes on with
//! the line it was writing.
//!
//! `cargo run -p ward-client --example recover`, then type lines (Ctrl-D ends). The
//! server's address is `$WARD_SERVER` (default 127.0.0.1:7181); `$WARD_OWNER` names this
//! instance (default `journal-writer`): starting a second one with the same name ends the
//! first one's session at once, which is one way to watch this one recover.

mod common;

use std::io::BufRead;
use std::process::ExitCode;
use ward_client::blocking::{Client, LockGuard};
use ward_client::{CreateMode, Error};

const LOCK: &str = "/locks/journal";
const JOURNAL: &str = "/demo/journal";

fn main() -> ExitCode {
    let server = common::server();
    let owner = std::env::var("WARD_OWNER").unwrap_or_else(|_| "journal-writer".to_string());
    common::exit(&server, run(&server, &owner))
}

fn run(server: &str, owner: &str) -> Result<(), Error> {
    let (mut client, mut guard) = take_lock(server, owner)?;
    // A line that cannot be read ends the input, as its end does.
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        loop {
            match append(&client, &guard, &line) {
                Ok(()) => break,
                // The session ended (or may have, and the lock with it): start over with a
                // new client; the old one can do nothing more.
                Err(Error::SessionExpired | Error::StaleFence) => {
                    eprintln!("lost {LOCK} with the session; taking it again with a new client");
                    (client, guard) = take_lock(server, owner)?;
                }
                Err(e) => return Err(e),
            }
        }
        println!("appended {line:?} under fencing token {}", guard.fencing_token());
    }
    guard.unlock()?;
    client.close()
}

/// A new client (a new session) and the lock, held.
fn take_lock(server: &str, owner: &str) -> Result<(Client, LockGuard), Error> {
    let client = Client::builder(server).owner(owner).connect()?;
    for path in ["/demo", JOURNAL] {
        match client.create(path, b"", CreateMode::Persistent) {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(e) => return Err(e),
        }
    }
    let guard = client.lock(LOCK)?;
    println!("holding {LOCK} with fencing token {}", guard.fencing_token());
    Ok((client, guard))
}

/// Appends `line` to the journal, only while `guard` holds the lock.
fn append(client: &Client, guard: &LockGuard, line: &str) -> Result<(), Error> {
    if guard.is_lost() {
        return Err(Error::SessionExpired);
    }
    let (mut journal, stat) = client.get_data(JOURNAL)?;
    journal.extend_from_slice(line.as_bytes());
    journal.push(b'\n');
    // Fenced and conditional on the version read: nobody else's append is overwritten, and
    // a holder that lost the lock meanwhile writes nothing.
    client.set_data_fenced(&guard.fence(), JOURNAL, &journal, Some(stat.version)).map(drop)
}
