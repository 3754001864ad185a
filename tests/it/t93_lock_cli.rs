//! `ward lock`, `ward elect` and `ward holders` (G12) against a real server, with shell
//! commands as the protected work.

use crate::harness::*;

/// A shell command that records its critical section in `file`: enter (with the fencing
/// token and the contender path), a short pause, exit.
fn section_script(file: &str) -> String {
    format!(
        "echo \"enter $WARD_FENCING_TOKEN $WARD_LOCK_PATH\" >> '{file}'; sleep 0.05; \
         echo \"exit $WARD_FENCING_TOKEN\" >> '{file}'"
    )
}

/// How many lines of a `ward lock` run's stderr are ward's own. CMD shares that stderr, and
/// its shell may report its `sleep` "Terminated": the signal goes to CMD's whole group.
fn ward_lines(stderr: &str) -> usize {
    stderr.lines().filter(|line| line.starts_with("ward: ")).count()
}

/// A shell command that notes it started, runs until SIGTERM and notes that too.
fn until_term_script(file: &str) -> String {
    format!("trap \"echo term >> '{file}'; exit 0\" TERM; echo started >> '{file}'; while :; do sleep 0.05; done")
}

// G12: `ward lock` keeps 10 concurrent shell commands mutually exclusive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_lock_keeps_ten_shell_commands_exclusive() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let record = RecordFile::new("cli-lock");
        let script = section_script(&record.path_str());
        let mut runs: Vec<ClientProcess> =
            (0..10).map(|_| ClientProcess::spawn(&addr, &["lock", "/cli-mutex", "--", "sh", "-c", &script])).collect();
        for run in &mut runs {
            let status = run.wait_exit().await;
            assert!(status.success(), "ward lock: {status}");
        }
        let sections = check_exclusive(&record.read());
        assert_eq!(sections.count, 10);
        for who in &sections.who {
            assert!(who.starts_with("/cli-mutex/ward-"), "WARD_LOCK_PATH was {who:?}");
        }
        let c = connect(&addr).await;
        assert_eq!(c.get_children("/cli-mutex").await.expect("ls"), Vec::<String>::new());

        let status = run_cli(&addr, &["lock", "/cli-mutex", "--", "sh", "-c", "exit 7"]).await;
        assert_eq!(status.code(), Some(7), "CMD's status: {status:?}");
        let missing = run_cli(&addr, &["lock", "/cli-mutex", "--", "/nonexistent/ward-test-cmd"]).await;
        assert_eq!(missing.code(), Some(127), "{missing:?}");
        assert_eq!(missing.stderr.lines().count(), 1, "{missing:?}");
        assert_eq!(c.get_children("/cli-mutex").await.expect("ls"), Vec::<String>::new());
    })
    .await
}

// G12: `ward elect` runs one leader command at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_elect_runs_one_leader_command_at_a_time() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let record = RecordFile::new("cli-elect");
        let script = section_script(&record.path_str());
        let mut runs: Vec<ClientProcess> = (0..3)
            .map(|i| {
                let id = format!("e{i}");
                ClientProcess::spawn(&addr, &["elect", "--id", &id, "/cli-elect", "--", "sh", "-c", &script])
            })
            .collect();
        for run in &mut runs {
            let status = run.wait_exit().await;
            assert!(status.success(), "ward elect: {status}");
        }
        assert_eq!(check_exclusive(&record.read()).count, 3);
        let c = connect(&addr).await;
        assert_eq!(c.election("/cli-elect").leader().await.expect("leader"), None);
    })
    .await
}

// G12 (CLI): `lock --timeout` gives up without running CMD (exit 4, nothing left in the
// queue, and with --quiet one line on stderr); `holders` prints the holder and then the queue, each marked holder or waiter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_lock_timeout_and_holders() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let record = RecordFile::new("cli-timeout");
        let holder = connect(&addr).await;
        let guard = holder.lock_with_data("/cli-held", b"holder data").await.expect("lock");

        let ran = format!("echo ran >> '{}'", record.path_str());
        // --quiet: the only line is the verdict, not whom it waited behind.
        let out = run_cli(&addr, &["lock", "--quiet", "--timeout", "0.3", "/cli-held", "--", "sh", "-c", &ran]).await;
        assert_eq!(out.code(), Some(4), "{out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
        assert!(out.stderr.contains("not granted"), "{out:?}");
        assert_eq!(record.read(), "", "CMD ran without the lock");
        assert_eq!(holder.get_children("/cli-held").await.expect("ls").len(), 1, "the attempt left a node");

        let waiter = connect(&addr).await;
        let waiting = {
            let waiter = waiter.clone();
            tokio::spawn(async move { waiter.lock_with_data("/cli-held", b"waiter\ndata").await.expect("lock") })
        };
        wait_until("the waiter is queued", DEADLINE, || async {
            holder.get_children("/cli-held").await.expect("ls").len() == 2
        })
        .await;
        let out = run_cli(&addr, &["holders", "/cli-held"]).await.success();
        let queue = holder.lock_holders("/cli-held").await.expect("holders");
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{out:?}");
        let first = format!("holder {} token={} queued=", guard.path(), guard.fencing_token());
        assert!(lines[0].starts_with(&first), "{out:?}");
        assert!(lines[0].ends_with(&format!("session={} data=holder data", holder.session_id())), "{out:?}");
        assert!(lines[1].starts_with(&format!("waiter {} token={} ", queue[1].path, queue[1].token)), "{out:?}");
        assert!(lines[1].ends_with(&format!("session={} data=waiter\\ndata", waiter.session_id())), "{out:?}");
        guard.unlock().await.expect("unlock");
        within("the waiter holds", DEADLINE, waiting).await.expect("task").unlock().await.expect("unlock");
        assert_eq!(run_cli(&addr, &["holders", "/cli-held"]).await.success().stdout, "");
    })
    .await
}

// G12 (CLI): a lost lock stops CMD with SIGTERM and exits 3 with one line on stderr; a
// SIGTERM to ward stops CMD, releases and exits 128+15.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_lock_lost_or_terminated_stops_the_command() {
    bounded(async {
        let server = ServerProcess::start_with(&["--min-session-timeout-ms", "500"]);
        let proxy = Proxy::start(server.addr()).await;
        let observer = connect(&server.addr_str()).await;

        let record = RecordFile::new("cli-lost");
        let stderr = record.path().with_file_name("stderr.txt");
        let script = until_term_script(&record.path_str());
        let args = ["--session-timeout-ms", "1500", "lock", "/cli-lost", "--", "sh", "-c", &script];
        let mut run = ClientProcess::spawn_logged(&proxy.addr_str(), &args, &stderr);
        wait_until("CMD runs", DEADLINE, || async { record.read().contains("started") }).await;
        proxy.isolate();
        let status = run.wait_exit().await;
        assert_eq!(status.code(), Some(3), "ward lock after losing the lock: {status}");
        assert_eq!(record.read(), "started\nterm\n", "CMD got SIGTERM");
        let said = std::fs::read_to_string(&stderr).expect("stderr");
        assert_eq!(ward_lines(&said), 1, "{said:?}");
        assert!(said.contains("lost"), "{said:?}");

        let record = RecordFile::new("cli-term");
        let stderr = record.path().with_file_name("stderr.txt");
        let script = until_term_script(&record.path_str());
        let args = ["lock", "/cli-term", "--", "sh", "-c", &script];
        let mut run = ClientProcess::spawn_logged(&server.addr_str(), &args, &stderr);
        wait_until("CMD runs", DEADLINE, || async { record.read().contains("started") }).await;
        assert_eq!(observer.get_children("/cli-term").await.expect("ls").len(), 1);
        run.terminate();
        let status = run.wait_exit().await;
        assert_eq!(status.code(), Some(128 + 15), "ward lock after SIGTERM: {status}");
        assert_eq!(record.read(), "started\nterm\n", "CMD got SIGTERM");
        assert_eq!(observer.get_children("/cli-term").await.expect("ls"), Vec::<String>::new(), "released");
        let said = std::fs::read_to_string(&stderr).expect("stderr");
        assert_eq!(ward_lines(&said), 1, "{said:?}");
        assert!(said.contains("SIGTERM"), "{said:?}");
    })
    .await
}

/// CMD for the process-group tests: a shell that starts a grandchild (`sleep 30`), writes
/// its own pid and the grandchild's to `file`, and waits for it.
fn grandchild_script(file: &str) -> String {
    format!("sleep 30 & echo $$ $! > '{file}'; wait")
}

/// The state and process group of `pid` from /proc/PID/stat (`PID (COMM) STATE PPID PGRP
/// ...`, COMM may hold spaces, hence the last `)`); `None` once it is gone.
fn proc_stat(pid: &str) -> Option<(String, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.to_owned();
    fields.next()?;
    Some((state, fields.next()?.to_owned()))
}

/// The processes of process group `group` that still run: a zombie (exited, not yet reaped
/// by init) does no more work and is not counted.
fn running_in_group(group: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .expect("read /proc")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| proc_stat(pid).is_some_and(|(state, pgrp)| pgrp == group && state != "Z"))
        .collect()
}

/// Runs `ward ARGS... -- sh -c GRANDCHILD` against `server`; once the shell and its
/// grandchild run, checks that they make a process group of their own, calls `stop`, and
/// checks that ward exits `code` and that none of the group runs on.
async fn check_group_stopped(server: &str, args: &[&str], stop: impl FnOnce(&mut ClientProcess), code: i32) {
    let record = RecordFile::new("cli-group");
    let script = grandchild_script(&record.path_str());
    let mut run = ClientProcess::spawn(server, &[args, &["--", "sh", "-c", &script]].concat());
    wait_until("CMD wrote its pids", DEADLINE, || async { record.read().split_whitespace().count() == 2 }).await;
    let pids = record.read();
    let (sh, sleep) = pids.trim().split_once(' ').expect("two pids");
    let group = running_in_group(sh);
    assert!(group.iter().any(|p| p == sh) && group.iter().any(|p| p == sleep), "CMD leads a group: {group:?}");
    stop(&mut run);
    assert_eq!(run.wait_exit().await.code(), Some(code), "ward {args:?}");
    wait_until("no process of CMD's group runs", DEADLINE, || async { running_in_group(sh).is_empty() }).await;
}

// G12 (CLI): CMD is stopped with everything it started. When the lock is lost (ward exits 3)
// or ward gets SIGTERM (exit 128+15), CMD's process group gets the signal, and none of it (a
// shell and its background `sleep 30`) runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_lock_lost_or_terminated_stops_the_whole_process_group() {
    bounded(async {
        let server = ServerProcess::start_with(&["--min-session-timeout-ms", "500"]);
        let proxy = Proxy::start(server.addr()).await;
        let args = ["--session-timeout-ms", "1500", "lock", "/cli-group-lost"];
        check_group_stopped(&proxy.addr_str(), &args, |_| proxy.isolate(), 3).await;
        check_group_stopped(&server.addr_str(), &["lock", "/cli-group-term"], ClientProcess::terminate, 128 + 15).await;
    })
    .await
}

// G12 (CLI): a command that survives SIGTERM (it traps it and runs on) is killed with its
// group once `--grace` has passed after the lock is lost; ward says so and exits 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_lock_lost_kills_a_group_that_outlives_the_grace() {
    bounded(async {
        let server = ServerProcess::start_with(&["--min-session-timeout-ms", "500"]);
        let proxy = Proxy::start(server.addr()).await;
        let record = RecordFile::new("cli-grace");
        let stderr = record.path().with_file_name("stderr.txt");
        let file = record.path_str();
        let script = format!("trap \"echo term >> '{file}'\" TERM; echo $$ >> '{file}'; while :; do sleep 0.05; done");
        let args = ["--session-timeout-ms", "1500", "lock", "--grace", "1", "/cli-grace", "--", "sh", "-c", &script];
        let mut run = ClientProcess::spawn_logged(&proxy.addr_str(), &args, &stderr);
        wait_until("CMD runs", DEADLINE, || async { record.read().ends_with('\n') }).await;
        let sh = record.read().trim().to_owned();
        proxy.isolate();
        assert_eq!(run.wait_exit().await.code(), Some(3), "ward lock after losing the lock");
        assert_eq!(record.read(), format!("{sh}\nterm\n"), "CMD got SIGTERM first, and survived it");
        let said = std::fs::read_to_string(&stderr).expect("stderr");
        assert_eq!(ward_lines(&said), 1, "{said:?}");
        assert!(said.contains("lost") && said.contains("SIGTERM") && said.contains("then SIGKILL"), "{said:?}");
        wait_until("no process of CMD's group runs", DEADLINE, || async { running_in_group(&sh).is_empty() }).await;
    })
    .await
}

/// The most sections of `record` open at once (enter/exit lines, any token).
fn most_at_once(record: &str) -> usize {
    let (mut open, mut most) = (0usize, 0);
    for line in record.lines() {
        if line.starts_with("enter") {
            open += 1;
            most = most.max(open);
        } else {
            open -= 1;
        }
    }
    most
}

// The other documented forms: `lock --shared`, `lock PATH PATH` (all or nothing; tokens and
// paths comma-separated) and `semaphore --permits N`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_shared_multi_path_and_semaphore_forms() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;

        let reader = c.read_lock("/cli-rw").await.expect("read lock");
        let shared = run_cli(&addr, &["lock", "--shared", "--timeout", "20", "/cli-rw", "--", "true"]).await;
        assert_eq!(shared.code(), Some(0), "a reader joins a reader: {shared:?}");
        let writer = run_cli(&addr, &["lock", "--timeout", "0.3", "/cli-rw", "--", "true"]).await;
        assert_eq!(writer.code(), Some(4), "a writer waits for the reader: {writer:?}");
        reader.unlock().await.expect("unlock");

        let record = RecordFile::new("cli-multi");
        let script = format!("echo \"$WARD_FENCING_TOKEN $WARD_LOCK_PATH\" >> '{}'", record.path_str());
        run_cli(&addr, &["lock", "/cli-a", "/cli-b", "--", "sh", "-c", &script]).await.success();
        let line = record.read();
        let (tokens, paths) = line.trim_end().split_once(' ').expect("two words");
        assert_eq!(tokens.split(',').filter(|t| t.parse::<u64>().is_ok()).count(), 2, "{line:?}");
        let paths: Vec<&str> = paths.split(',').collect();
        assert!(paths.len() == 2 && paths[0].starts_with("/cli-a/") && paths[1].starts_with("/cli-b/"), "{line:?}");

        let record = RecordFile::new("cli-semaphore");
        let script = section_script(&record.path_str());
        let mut runs: Vec<ClientProcess> = (0..4)
            .map(|_| {
                ClientProcess::spawn(&addr, &["semaphore", "--permits", "2", "/cli-sem", "--", "sh", "-c", &script])
            })
            .collect();
        for run in &mut runs {
            let status = run.wait_exit().await;
            assert!(status.success(), "ward semaphore: {status}");
        }
        let text = record.read();
        assert_eq!(text.lines().filter(|l| l.starts_with("enter")).count(), 4, "{text}");
        assert!(most_at_once(&text) <= 2, "more than 2 permits held at once:\n{text}");
        let mismatch = run_cli(&addr, &["semaphore", "--permits", "3", "/cli-sem", "--", "true"]).await;
        assert_eq!(mismatch.code(), Some(1), "{mismatch:?}");
        assert_eq!(mismatch.stderr.lines().count(), 1, "{mismatch:?}");
    })
    .await
}
