//! The recipe forms of the CLI (G12; docs/recipes.md): `ward lock --shared`, `ward lock
//! PATH PATH...` and `ward semaphore --permits N`, with shell commands recording their
//! sections in an outside file; and what a queued `ward lock` says on stderr while it waits.

use crate::harness::*;
use std::collections::HashMap;
use std::time::Duration;
use ward_client::Client;

/// Sections that must overlap wait, inside CMD, until the record shows `count` lines
/// matching `pattern` (a bounded loop of 0.05 s polls, 20 s at most): if the lock wrongly
/// kept them apart, the first would give up waiting and the record would show no overlap.
fn barrier(file: &str, pattern: &str, count: usize) -> String {
    format!(
        "i=0; while [ \"$(grep -c -e '{pattern}' '{file}')\" -lt {count} ] && [ $i -lt 400 ]; do \
         sleep 0.05; i=$((i+1)); done"
    )
}

/// CMD for one section: enter (token, `tag`, contender paths), `middle`, exit.
fn section(file: &str, tag: &str, middle: &str) -> String {
    format!(
        "echo \"enter $WARD_FENCING_TOKEN {tag}$WARD_LOCK_PATH\" >> '{file}'; {middle}; \
         echo \"exit $WARD_FENCING_TOKEN\" >> '{file}'"
    )
}

/// Spawns `ward ARGS...` and waits until its contender (one per dir) is queued, so the
/// processes queue in the order they are started.
async fn spawn_queued(addr: &str, observer: &Client, dirs: &[&str], args: &[&str]) -> ClientProcess {
    let before: Vec<usize> = {
        let mut sizes = Vec::new();
        for dir in dirs {
            sizes.push(observer.get_children(dir).await.map_or(0, |c| c.len()));
        }
        sizes
    };
    let process = ClientProcess::spawn(addr, args);
    for (dir, before) in dirs.iter().zip(before) {
        wait_until("the CLI's contender is queued", DEADLINE, || async {
            observer.get_children(dir).await.map_or(0, |c| c.len()) > before
        })
        .await;
    }
    process
}

async fn all_succeed(runs: &mut [ClientProcess]) {
    for run in runs {
        let status = run.wait_exit().await;
        assert!(status.success(), "ward: {status}");
    }
}

// G12: `ward lock --shared` holders run their commands together and plain `ward lock`
// holders of the same lock alone. Queue (behind a writer the test holds): R R R W R R W; the
// first three readers wait inside CMD for each other, so they must hold at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_shared_holders_overlap_and_exclusive_ones_do_not() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let observer = connect(&addr).await;
        let gate = observer.lock("/cli-rw").await.expect("the test's write lock");
        let record = RecordFile::new("cli-rw");
        let file = record.path_str();
        let read = section(&file, "R ", &barrier(&file, " R ", 3));
        let write = section(&file, "W ", "sleep 0.05");
        let mut runs = Vec::new();
        for shared in [true, true, true, false, true, true, false] {
            let args: &[&str] = if shared {
                &["lock", "--shared", "/cli-rw", "--", "sh", "-c", &read]
            } else {
                &["lock", "/cli-rw", "--", "sh", "-c", &write]
            };
            runs.push(spawn_queued(&addr, &observer, &["/cli-rw"], args).await);
        }
        gate.unlock().await.expect("unlock");
        all_succeed(&mut runs).await;

        let text = record.read();
        let seen = check_read_write(&text);
        assert_eq!((seen.reads, seen.writes), (5, 2), "{text}");
        assert!(seen.most_readers >= 3, "the three first readers did not run together:\n{text}");
        assert_eq!(observer.get_children("/cli-rw").await.expect("ls"), Vec::<String>::new());
    })
    .await
}

/// Checks a record of multi-path sections ("enter <t1,t2..> <p1,p2..>", "exit <t1,t2..>",
/// paths the contender nodes): no two sections hold a lock directory at once, and each
/// directory's tokens increase. Returns the directory lists of the sections, in order.
fn check_multi_path(text: &str) -> Vec<String> {
    let mut open: HashMap<String, Vec<String>> = HashMap::new();
    let mut holder: HashMap<String, String> = HashMap::new();
    let mut last: HashMap<String, u64> = HashMap::new();
    let mut sections = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            ["enter", tokens, paths] => {
                let dirs: Vec<String> =
                    paths.split(',').map(|p| p.rsplit_once('/').expect("a contender path").0.to_string()).collect();
                let numbers: Vec<u64> = tokens.split(',').map(|t| t.parse().expect("a token")).collect();
                assert_eq!(numbers.len(), dirs.len(), "line {}: one token per path: {line:?}", n + 1);
                for (dir, token) in dirs.iter().zip(numbers) {
                    if let Some(other) = holder.get(dir) {
                        panic!("line {}: overlap on {dir}: {line:?} while {other} holds it", n + 1);
                    }
                    let previous = last.insert(dir.clone(), token).unwrap_or(0);
                    assert!(token > previous, "line {}: {dir}: token {token} not above {previous}", n + 1);
                    holder.insert(dir.clone(), tokens.to_string());
                }
                sections.push(dirs.join(","));
                open.insert(tokens.to_string(), dirs);
            }
            ["exit", tokens] => {
                let dirs = open.remove(tokens).unwrap_or_else(|| panic!("line {}: {line:?} closes nothing", n + 1));
                for dir in dirs {
                    holder.remove(&dir);
                }
            }
            _ => panic!("line {}: malformed record line {line:?}", n + 1),
        }
    }
    assert!(open.is_empty(), "the record ends inside sections {open:?}");
    sections
}

// G12: `ward lock A B` holders never overlap a holder of A or of B, whichever order
// the paths are given in; WARD_FENCING_TOKEN and WARD_LOCK_PATH list them in that order.
// Eight processes ({a,b}, {b,a}, {a}, {b} twice each) queue behind the test's hold of both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_multi_path_holders_never_overlap_a_holder_of_any_of_their_paths() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let observer = connect(&addr).await;
        let gate = observer.lock_all(&["/cli-ma", "/cli-mb"]).await.expect("the test's hold of both");
        let record = RecordFile::new("cli-multi");
        let script = section(&record.path_str(), "", "sleep 0.05");
        let mut runs = Vec::new();
        for _ in 0..2 {
            for dirs in [&["/cli-ma", "/cli-mb"][..], &["/cli-mb", "/cli-ma"], &["/cli-ma"], &["/cli-mb"]] {
                let args = [&["lock"][..], dirs, &["--", "sh", "-c", &script]].concat();
                runs.push(spawn_queued(&addr, &observer, dirs, &args).await);
            }
        }
        gate.unlock().await.expect("unlock");
        all_succeed(&mut runs).await;

        let text = record.read();
        let mut sections = check_multi_path(&text);
        sections.sort();
        let expected = ["/cli-ma", "/cli-ma", "/cli-ma,/cli-mb", "/cli-ma,/cli-mb", "/cli-mb", "/cli-mb"];
        let expected = [&expected[..], &["/cli-mb,/cli-ma", "/cli-mb,/cli-ma"]].concat();
        assert_eq!(sections, expected, "one section per run, paths in the order given:\n{text}");
        for dir in ["/cli-ma", "/cli-mb"] {
            assert_eq!(observer.get_children(dir).await.expect("ls"), Vec::<String>::new());
        }
    })
    .await
}

// G12: `ward semaphore --permits 3` never runs more than 3 commands at once, and does
// run 3 (the first three wait inside CMD for each other), across 6 concurrent processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_semaphore_never_runs_more_than_n_commands() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let record = RecordFile::new("cli-sem");
        let file = record.path_str();
        let script = section(&file, "", &barrier(&file, "^enter", 3));
        let mut runs: Vec<ClientProcess> = (0..6)
            .map(|_| {
                ClientProcess::spawn(&addr, &["semaphore", "--permits", "3", "/cli-sem3", "--", "sh", "-c", &script])
            })
            .collect();
        all_succeed(&mut runs).await;
        let text = record.read();
        let seen = check_at_most(&text, 3);
        assert_eq!(seen.count, 6, "{text}");
        assert_eq!(seen.most_at_once, 3, "three permits never in use together:\n{text}");
        let c = connect(&addr).await;
        assert_eq!(c.get_children("/cli-sem3").await.expect("ls"), Vec::<String>::new());
    })
    .await
}

// G12 (CLI): a queued `ward lock` says on stderr, once, whom it waits behind: the holder's
// context (another ward's pid, host and command); `--quiet` says nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_waiting_lock_names_its_holder_once() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let observer = connect(&addr).await;
        let record = RecordFile::new("cli-wait");
        let script = format!("echo started >> '{}'; while :; do sleep 0.05; done", record.path_str());
        let mut holder = ClientProcess::spawn(&addr, &["lock", "/cli-wait", "--", "sh", "-c", &script]);
        wait_until("the holder's CMD runs", DEADLINE, || async { record.read().contains("started") }).await;
        let quiet_stderr = record.path().with_file_name("quiet.txt");
        let quiet_args = ["lock", "--quiet", "/cli-wait", "--", "true"];
        let quiet = ClientProcess::spawn_logged(&addr, &quiet_args, &quiet_stderr);
        wait_until("the quiet one is queued", DEADLINE, || async {
            observer.get_children("/cli-wait").await.expect("ls").len() == 2
        })
        .await;
        let stderr = record.path().with_file_name("stderr.txt");
        let waiter = ClientProcess::spawn_logged(&addr, &["lock", "/cli-wait", "--", "true"], &stderr);
        stderr_says(&stderr, "waiting for the lock /cli-wait").await;
        let line = std::fs::read_to_string(&stderr).expect("stderr");
        let context = format!("held by ward-cli pid={} host=", holder.pid());
        assert!(line.contains(&context) && line.contains("cmd=sh -c echo started"), "{line:?}");
        assert!(line.contains("and 1 more waiting ahead"), "the quiet one queued first: {line:?}");
        assert_eq!(observer.get_children("/cli-wait").await.expect("ls").len(), 3);

        holder.terminate();
        assert_eq!(holder.wait_exit().await.code(), Some(128 + 15));
        for mut run in [quiet, waiter] {
            assert!(run.wait_exit().await.success());
        }
        assert_eq!(std::fs::read_to_string(&stderr).expect("stderr"), line, "one line, said once");
        assert_eq!(std::fs::read_to_string(&quiet_stderr).expect("stderr"), "", "--quiet");
    })
    .await
}

// G12, G7 (CLI): a queued `ward lock` says when it loses the connection to the server and
// when it is back (the server killed, then restarted on its port and data); its session and
// its place in the queue survive, and it runs CMD once the holder releases. `--quiet` says
// nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_waiting_lock_says_when_the_connection_is_lost_and_back() {
    bounded(async {
        let mut server = ServerProcess::start();
        let addr = server.addr_str();
        let holder = connect_with(&addr, Duration::from_secs(30)).await;
        let guard = holder.lock_with_data("/cli-cut", b"the test's holder").await.expect("lock");
        let record = RecordFile::new("cli-cut");
        let quiet_stderr = record.path().with_file_name("quiet.txt");
        let stderr = record.path().with_file_name("stderr.txt");
        let quiet_args = ["--session-timeout-ms", "30000", "lock", "--quiet", "/cli-cut", "--", "true"];
        let quiet = ClientProcess::spawn_logged(&addr, &quiet_args, &quiet_stderr);
        let args = ["--session-timeout-ms", "30000", "lock", "/cli-cut", "--", "true"];
        let waiter = ClientProcess::spawn_logged(&addr, &args, &stderr);
        stderr_says(&stderr, "waiting for the lock /cli-cut: held by the test's holder").await;

        server.kill9_now();
        stderr_says(&stderr, "lost the connection to the server").await;
        server.restart_now();
        stderr_says(&stderr, "connected to the server again").await;
        guard.unlock().await.expect("unlock after the restart");
        for mut run in [quiet, waiter] {
            assert!(run.wait_exit().await.success(), "ward lock ran CMD after the restart");
        }
        let said = std::fs::read_to_string(&stderr).expect("stderr");
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines.len(), 3, "{said:?}");
        assert!(lines[0].contains("waiting for the lock /cli-cut"), "{said:?}");
        assert!(lines[1].contains("lost the connection") && lines[2].contains("again"), "{said:?}");
        assert_eq!(std::fs::read_to_string(&quiet_stderr).expect("stderr"), "", "--quiet");
    })
    .await
}

// G12, G25 (CLI): a `lock` or `semaphore` that asks for what the directory was not fixed
// with is refused (exit 1, CMD not run) with what the directory has: a semaphore's permits
// for a plain lock or another number of permits, the lock-delay for another delay
// (docs/recipes.md, "Semaphores" and "Lock-delay").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_refusals_name_the_directorys_permits_and_lock_delay() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;
        // Held, so that the directories (containers) and what they record stay.
        let _permit = c.acquire_permit("/sem", 3).await.expect("a permit of 3");
        let options = ward_client::LockOptions::new().lock_delay(Duration::from_secs(5));
        let _delayed = c.acquire_with(&["/ld"], ward_client::LockKind::Exclusive, b"", &options).await.expect("lock");
        for (args, said) in [
            (
                &["lock", "--quiet", "/sem", "--", "true"][..],
                "ward: lock /sem: /sem is a semaphore of 3 permits, not a lock (`ward semaphore --permits 3 /sem` \
                 takes one)",
            ),
            (
                &["semaphore", "--quiet", "--permits", "2", "/sem", "--", "true"],
                "ward: permit (of 2) of /sem: /sem is a semaphore of 3 permits, not 2 (every contender must ask for 3)",
            ),
            (
                &["lock", "--quiet", "--lock-delay", "2", "/ld", "--", "true"],
                "ward: lock /ld: /ld has a lock-delay of 5s, not 2s (ask for 5s or for none)",
            ),
        ] {
            let out = run_cli(&addr, args).await;
            assert_eq!(out.code(), Some(1), "{args:?}: {out:?}");
            assert_eq!(out.stderr.trim_end(), said, "{args:?}");
        }
    })
    .await
}
