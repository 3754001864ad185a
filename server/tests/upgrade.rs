//! Upgrades and lost files, through the real binary (G11; docs/storage.md "Format versions" and
//! "Lost files", docs/operations.md "Upgrading"): a data directory written by an earlier
//! release opens and serves its tree; files of a newer format are refused with the version
//! that wrote them; a log whose newest segment was deleted or cut is refused naming the
//! file, and starts with `--accept-data-loss`, serving what remains.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;
use ward_client::{Client, CreateMode};
use ward_testkit::run::try_run;
use ward_testkit::{bounded, connect, ServerProcess, TempDir};

/// A refused start exits at once; one that starts by mistake is killed after this.
const REFUSAL: Duration = Duration::from_secs(60);

/// The golden directory of format 1 (server/tests/golden/README.md).
fn golden_v1() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1")
}

/// A copy of `from` (files and directories) in a new temporary directory, as `data`.
fn copy_of(from: &Path) -> (TempDir, PathBuf) {
    let tmp = TempDir::new("upgrade");
    let data = tmp.path().join("data");
    copy_tree(from, &data);
    (tmp, data)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    for item in std::fs::read_dir(from).unwrap_or_else(|e| panic!("list {}: {e}", from.display())) {
        let path = item.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        match path.is_dir() {
            true => copy_tree(&path, &target),
            false => drop(std::fs::copy(&path, &target).unwrap_or_else(|e| panic!("copy {}: {e}", path.display()))),
        }
    }
}

/// The flags of a server on `data` with 1 MiB segments and only the client listener.
fn flags(data: &Path) -> Vec<String> {
    ward_testkit::offline::bare_flags(data)
}

/// A server on `data`, with `extra` flags; it must start.
fn serve(data: &Path, extra: &[&str]) -> ServerProcess {
    ward_testkit::offline::start_bare(data, extra)
}

/// Runs `ward-server` on `data` to its exit; it must refuse to start.
fn refused(data: &Path) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ward-server"));
    for (var, _) in std::env::vars_os() {
        if var.to_string_lossy().starts_with("WARD_") {
            cmd.env_remove(var);
        }
    }
    cmd.args(flags(data));
    let out: Output = try_run(&mut cmd, b"", REFUSAL).unwrap_or_else(|why| panic!("{why}"));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "want a refusal (exit 1); stderr:\n{stderr}");
    assert!(!stdout.contains("listening on"), "it listened:\n{stdout}");
    assert!(!stderr.contains("panicked"), "a refusal is an error, not a panic:\n{stderr}");
    stderr.into_owned()
}

fn segment(data: &Path, number: u64) -> PathBuf {
    data.join("log").join(format!("{number:020}.wal"))
}

fn segment_numbers(data: &Path) -> Vec<u64> {
    let names = std::fs::read_dir(data.join("log")).expect("list log/").map(|e| e.expect("entry").file_name());
    let mut numbers: Vec<u64> =
        names.filter_map(|n| n.to_str()?.strip_suffix(".wal")?.parse().ok()).collect::<Vec<_>>();
    numbers.sort_unstable();
    numbers
}

/// Replaces the digit at the end of the 8-byte magic of `path` (the format version).
fn set_version_digit(path: &Path, digit: u8) {
    let mut bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    bytes[7] = digit;
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

async fn data_of(client: &Client, path: &str) -> (String, i32) {
    let (data, stat) = client.get_data(path).await.unwrap_or_else(|e| panic!("get {path}: {e}"));
    (String::from_utf8_lossy(&data).into_owned(), stat.version)
}

/// The tree the golden v1 directory serves (its README): from the snapshot, and from the
/// log entries after it; with `jobs` sequential children of `/app/jobs` (6, and those the
/// test added, with data of the same form).
async fn assert_golden_tree(client: &Client, jobs: usize) {
    let mut top = client.get_children("/").await.expect("ls /");
    top.sort();
    assert_eq!(top, ["after", "app", "users"]);
    let expected = [
        ("/after", "written after the snapshot", 0),
        ("/app", "golden app", 0),
        ("/app/config", r#"{"replicas":5,"zone":"eu-1"}"#, 1),
        ("/app/jobs", "", 0),
        ("/users", "", 0),
        ("/users/alice", "alice v2", 1),
        ("/users/bob", "bob", 0),
        ("/users/dave", "dave", 0),
    ];
    for (path, data, version) in expected {
        assert_eq!(data_of(client, path).await, (data.to_string(), version), "{path}");
    }
    let mut children = client.get_children("/app/jobs").await.expect("ls /app/jobs");
    children.sort();
    let want: Vec<String> = (0..jobs).map(|i| format!("job-{i:010}")).collect();
    assert_eq!(children, want);
    for (i, job) in children.iter().enumerate() {
        assert_eq!(data_of(client, &format!("/app/jobs/{job}")).await, (format!("job {}", i + 1), 0));
    }
    let mut users = client.get_children("/users").await.expect("ls /users");
    users.sort();
    assert_eq!(users, ["alice", "bob", "dave"], "carol was deleted");
}

/// The golden directory of format 1 opens with this version, serves its tree, takes writes
/// (the sequence counter goes on), and opens again after a clean stop and after a SIGKILL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_golden_v1_directory_opens_and_serves_its_tree() {
    let (_tmp, data) = copy_of(&golden_v1());
    let mut server = serve(&data, &[]);
    bounded(async {
        let client = connect(&server.addr_str()).await;
        assert_golden_tree(&client, 6).await;
        let next = client.create("/app/jobs/job-", b"job 7", CreateMode::PersistentSequential).await.expect("create");
        assert_eq!(next, "/app/jobs/job-0000000006", "the sequence counter came through");
        client.close().await.expect("close");
    })
    .await;
    assert!(server.terminate().success(), "a clean stop");
    server.restart();
    bounded(async {
        let client = connect(&server.addr_str()).await;
        assert_golden_tree(&client, 7).await;
        assert_eq!(data_of(&client, "/app/jobs/job-0000000006").await, ("job 7".to_string(), 0));
    })
    .await;
    server.kill9();
    server.restart();
    bounded(async {
        assert_golden_tree(&connect(&server.addr_str()).await, 7).await;
    })
    .await;
}

/// A segment of a newer format than this version reads is refused with the version that
/// wrote it; so is a snapshot. Nothing is changed: the directory opens once the file is put
/// back.
#[test]
fn files_of_a_newer_format_are_refused_naming_the_version() {
    let (_tmp, data) = copy_of(&golden_v1());
    let wal = segment(&data, 1);
    set_version_digit(&wal, b'9');
    let stderr = refused(&data);
    let want = format!(
        "{} was written by format version 9; this ward-server reads up to 2: upgrade ward-server",
        wal.display()
    );
    assert!(stderr.contains(&want), "want {want:?} in:\n{stderr}");
    set_version_digit(&wal, b'1');

    let snapshot = data.join("snapshot");
    set_version_digit(&snapshot, b'9');
    let stderr = refused(&data);
    let want = format!("{} was written by format version 9; this ward-server reads up to ", snapshot.display());
    assert!(stderr.contains(&want), "want {want:?} in:\n{stderr}");
    set_version_digit(&snapshot, b'3');
    drop(serve(&data, &[]));
}

/// Writes nodes of 100 KB until the log has at least three 1 MiB segments; returns how many.
async fn fill_segments(server: &ServerProcess, data: &Path) -> usize {
    let client = connect(&server.addr_str()).await;
    let mut n = 0;
    while segment_numbers(data).len() < 3 {
        assert!(n < 100, "no third segment after {n} writes of 100 KB");
        client.create(&format!("/n{n:03}"), &node_data(n), CreateMode::Persistent).await.expect("create");
        n += 1;
    }
    // A few more, in the newest segment.
    for _ in 0..3 {
        client.create(&format!("/n{n:03}"), &node_data(n), CreateMode::Persistent).await.expect("create");
        n += 1;
    }
    n
}

fn node_data(n: usize) -> Vec<u8> {
    vec![n as u8; 100_000]
}

/// What remains: nodes `/n000` to some `/nK`, in order (the log's prefix), each with its data.
async fn remaining_nodes(client: &Client) -> usize {
    let mut names = client.get_children("/").await.expect("ls /");
    names.sort();
    for (i, name) in names.iter().enumerate() {
        assert_eq!(name, &format!("n{i:03}"), "what remains is a prefix of the writes: {names:?}");
        let (bytes, _) = client.get_data(&format!("/{name}")).await.expect("get");
        assert!(bytes == node_data(i), "/{name}: its data");
    }
    names.len()
}

/// A data directory whose log has three segments or more, its server killed with SIGKILL;
/// and how many nodes were written.
async fn killed_with_three_segments() -> (TempDir, PathBuf, usize) {
    let tmp = TempDir::new("lost-files");
    let data = tmp.path().join("data");
    let mut server = serve(&data, &[]);
    let written = bounded(fill_segments(&server, &data)).await;
    server.kill9();
    (tmp, data, written)
}

/// How many nodes a server on `data` started with `extra` flags serves (a prefix of those
/// written, each checked); the server is stopped after.
async fn remaining_when_served(data: &Path, extra: &[&str]) -> usize {
    let server = serve(data, extra);
    bounded(async { remaining_nodes(&connect(&server.addr_str()).await).await }).await
}

/// The newest segment deleted after a SIGKILL (the acknowledged writes in it would be gone):
/// the start is refused naming the file; `--accept-data-loss` starts with the older segments'
/// writes, and records that, so the next plain start goes on from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_newest_segment_is_refused_naming_it_and_accepted_with_the_flag() {
    let (_tmp, data, written) = killed_with_three_segments().await;
    let newest = *segment_numbers(&data).last().expect("segments");
    std::fs::remove_file(segment(&data, newest)).expect("delete the newest segment");

    let stderr = refused(&data);
    let want = format!("{}: missing: the log had reached segment {newest}", segment(&data, newest).display());
    assert!(stderr.contains(&want), "want {want:?} in:\n{stderr}");
    assert!(stderr.contains("--accept-data-loss"), "the way out is named:\n{stderr}");

    let kept = remaining_when_served(&data, &["--accept-data-loss"]).await;
    assert!(kept > 0 && kept < written, "{kept} of {written} nodes remain");
    let again = remaining_when_served(&data, &[]).await;
    assert_eq!(again, kept, "the accepted loss is the new normal");
}

/// The newest segment cut short (a copy that stopped halfway): refused naming the file and
/// its sizes; `--accept-data-loss` starts with the records before the cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_newest_segment_is_refused_naming_it_and_accepted_with_the_flag() {
    let (_tmp, data, written) = killed_with_three_segments().await;
    let newest = segment(&data, *segment_numbers(&data).last().expect("segments"));
    let file = std::fs::OpenOptions::new().write(true).open(&newest).expect("open");
    file.set_len(150_000).expect("cut");
    drop(file);

    let stderr = refused(&data);
    let want = format!("{}: is 150000 bytes, but was created with 1048576", newest.display());
    assert!(stderr.contains(&want), "want {want:?} in:\n{stderr}");

    let kept = remaining_when_served(&data, &["--accept-data-loss"]).await;
    assert!(kept > 0 && kept < written, "{kept} of {written} nodes remain");
}

/// The golden three-member ensemble of the last release on openraft 0.9
/// (server/tests/golden/README.md, "ensemble-v2").
fn golden_ensemble() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/ensemble-v2")
}

/// The peer addresses the golden ensemble's membership names.
const GOLDEN_MEMBERS: &str = "1=127.0.0.1:47191,2=127.0.0.1:47192,3=127.0.0.1:47193";

/// A port free at the time, for a member's peer listener.
fn free_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    format!("127.0.0.1:{port}")
}

// G11 and G14 across the move to openraft 0.10: the data directories of a three-member
// ensemble written by the last openraft 0.9 release open on this one, elect a leader, and
// serve the tree they held (snapshot and log after it) on every member; writes go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_golden_ensemble_of_the_openraft_0_9_release_opens_and_serves_on_this_one() {
    let tmp = TempDir::new("upgrade-ensemble");
    let peers: Vec<String> = (0..3).map(|_| free_port()).collect();
    let routes: Vec<String> = peers.iter().enumerate().map(|(i, addr)| format!("{}={addr}", i + 1)).collect();
    let routes = routes.join(",");
    let members: Vec<ServerProcess> = (1..=3)
        .map(|id| {
            let data = tmp.path().join(id.to_string());
            copy_tree(&golden_ensemble().join(id.to_string()), &data);
            let id = id.to_string();
            let peer = &peers[id.parse::<usize>().expect("id") - 1];
            let member = [
                "--id",
                &id,
                "--ensemble",
                GOLDEN_MEMBERS,
                "--ensemble-name",
                "golden",
                "--peer-listen",
                peer,
                "--peer-route",
                &routes,
            ];
            serve(&data, &member)
        })
        .collect();
    let addrs: Vec<String> = members.iter().map(ServerProcess::addr_str).collect();
    bounded(async {
        let client =
            ward_testkit::wait_for("a member of the upgraded ensemble takes a session", ward_testkit::DEADLINE, || {
                let addrs = addrs.join(",");
                async move { Client::connect(&addrs).await.ok() }
            })
            .await;
        client.create("/upgraded", b"on openraft 0.10", CreateMode::Persistent).await.expect("a write");
        for addr in &addrs {
            let member = connect(addr).await;
            member.sync("/").await.expect("sync");
            let mut top = member.get_children("/").await.expect("ls /");
            top.sort();
            let bulk: Vec<String> = (1..=20).map(|i| format!("bulk-{i}")).collect();
            let mut want: Vec<String> = ["after", "app", "upgraded", "users"].map(String::from).to_vec();
            want.extend(bulk);
            want.sort();
            assert_eq!(top, want, "the tree at {addr}");
            assert_eq!(data_of(&member, "/app").await, ("golden ensemble app".into(), 0));
            assert_eq!(data_of(&member, "/app/config").await, (r#"{"replicas":5}"#.into(), 1));
            assert_eq!(data_of(&member, "/users/alice").await, ("alice v2".into(), 1));
            assert_eq!(data_of(&member, "/after").await, ("written after the snapshot".into(), 0));
            assert_eq!(data_of(&member, "/bulk-20").await, ("20".into(), 0));
            assert_eq!(member.get_children("/app/jobs").await.expect("ls").len(), 5);
            member.close().await.expect("close");
        }
        let next = client.create("/app/jobs/job-", b"job 6", CreateMode::PersistentSequential).await.expect("create");
        assert_eq!(next, "/app/jobs/job-0000000005", "the sequence counter came through");
        client.close().await.expect("close");
    })
    .await;
    drop(members);
}
