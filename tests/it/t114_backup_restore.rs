//! Backup and restore: `ward backup` takes a consistent copy of a running ensemble through a
//! member's admin listener, and `ward-server --restore FILE` seeds a new ensemble from it.

use crate::harness::*;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use ward_client::{CreateMode, Error};
use ward_proto::{ClientMessage, ErrorCode, Hello, ServerMessage, SessionId, SessionSecret, Zxid};
use ward_testkit::{serial, Ensemble, TempDir};

/// Writers creating nodes while the backup is taken.
const WRITERS: usize = 8;

/// Writes each writer has had acknowledged before the backup is asked for.
const BEFORE: usize = 20;

/// The admin token every server here is started with (≥ 16 characters).
const TOKEN: &str = "t114-backup-admin-token-0123456789";

// G29: a backup holds every write acknowledged at or before its zxid and none after it; an
// ensemble restored from it serves exactly that state under a new name, and sessions it
// never saw are expired.
//
// Eight writers create nodes on a 3-member ensemble while `ward backup` asks a follower for
// a backup: every write acknowledged before the backup was asked for has a czxid at most the
// backup's zxid Z. The writers go on until writes past Z are acknowledged, and a session is
// opened after the backup. A new 3-member ensemble, every member started with
// `--restore FILE --ensemble-name restored`, then serves, at every member, each acknowledged
// write with czxid ≤ Z (with that czxid) and no acknowledged write with czxid > Z; the
// session opened after the backup is answered expired by every member (not "try another"
// for ever), and a new session writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_ensemble_serves_exactly_the_writes_up_to_the_backups_zxid() {
    let _serial = serial().await;
    bounded(async {
        let secrets = TempDir::new("backup-secrets");
        let token = token_file(secrets.path(), "admin-token", TOKEN);
        let backup = secrets.path().join("ward.backup");

        let old = Ensemble::start(3, &["--admin-token-file", &token]).await;
        let setup = connect_serving(&old.connect_string(), Duration::from_secs(10)).await;
        match answered("create /w", || setup.create("/w", b"", CreateMode::Persistent)).await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(e) => panic!("create /w: {e:?}"),
        }

        let acked = Arc::new(Mutex::new(Vec::<Acked>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<JoinHandle<()>> = (0..WRITERS)
            .map(|w| tokio::spawn(writer(w, old.connect_string(), Arc::clone(&acked), Arc::clone(&stop))))
            .collect();
        wait_until("every writer has some acknowledged writes", DEADLINE, || async {
            let acked = acked.lock().expect("acked");
            (0..WRITERS).all(|w| acked.iter().filter(|a| a.writer == w).count() >= BEFORE)
        })
        .await;

        // Asked of a follower: it must still give the state at or after the leader's commit
        // index at the time of the request.
        let leader = old.leader(&[]).await;
        let asked = old.ids().into_iter().find(|&id| id != leader).expect("a follower");
        let admin = old.admin_addr(asked).to_string();
        let args = ["--output", "json", "backup", path_str(&backup), "--admin", &admin, "--admin-token-file", &token];
        // A member that cannot make sure it has every committed write (it lost contact with
        // the leader for a moment on a loaded machine) answers 503 and writes nothing: ask
        // again. Any other failure fails the test.
        let (before, out) = wait_for("a backup", DEADLINE, || async {
            let before = acked.lock().expect("acked").clone();
            let out = run_cli(&old.connect_string(), &args).await;
            match out.status.success() {
                true => Some((before, out)),
                false if out.stderr.contains("answered 503") => {
                    eprintln!("backup: {}; asking again", out.stderr.trim());
                    None
                }
                false => panic!("ward backup failed: {out:?}"),
            }
        })
        .await;
        let report: serde_json::Value =
            serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("backup JSON: {e}: {:?}", out.stdout));
        println!("backup from member {asked} (leader {leader}): {report}");
        let z: Zxid = report["zxid"].as_u64().unwrap_or_else(|| panic!("no zxid: {report}"));
        check_report(&report, &backup, "ward");
        let late = before.iter().filter(|a| a.czxid > z).collect::<Vec<_>>();
        assert!(
            late.is_empty(),
            "writes acknowledged before the backup was asked for are missing from it (Z {z}): {late:?}"
        );

        // A session the backup cannot hold: opened after it was taken.
        let opener = old.addr(old.ids()[0]).parse::<SocketAddr>().expect("member address");
        let (conn, welcome) =
            wait_for("a member of the old ensemble welcomes a session", DEADLINE, || opened(opener)).await;
        let after_backup = (welcome.session_id, welcome.secret);
        assert!(welcome.session_id.0 > z, "session {} opened after the backup (Z {z})", welcome.session_id);

        wait_until("writes past the backup's zxid are acknowledged", DEADLINE, || async {
            acked.lock().expect("acked").iter().filter(|a| a.czxid > z).count() >= WRITERS
        })
        .await;
        stop.store(true, Ordering::SeqCst);
        for task in writers {
            within("a writer to stop", DEADLINE, task).await.expect("writer task");
        }
        let acked = acked.lock().expect("acked").clone();
        let (kept, past): (Vec<Acked>, Vec<Acked>) = acked.into_iter().partition(|a| a.czxid <= z);
        println!("acknowledged writes: {} at or before Z {z}, {} after", kept.len(), past.len());
        drop(conn);
        let _ = setup.close().await;
        // Two ensembles at once would crowd a small machine: the old one's part is done.
        drop(old);

        let restored = Ensemble::start(3, &["--restore", path_str(&backup), "--ensemble-name", "restored"]).await;
        for id in restored.ids() {
            // One member only, synced with the leader: every member must serve the backup.
            let client = connect_serving(&restored.addr(id), Duration::from_secs(10)).await;
            answered("sync", || client.sync("/")).await.expect("sync");
            let children: BTreeSet<String> =
                answered("ls /w", || client.get_children("/w")).await.expect("ls /w").into_iter().collect();
            let missing: Vec<&Acked> = kept.iter().filter(|a| !children.contains(a.name())).collect();
            assert!(
                missing.is_empty(),
                "member {id}: {} of {} writes acknowledged at or before Z {z} are missing, e.g. {:?}",
                missing.len(),
                kept.len(),
                &missing[..missing.len().min(5)]
            );
            let extra: Vec<&Acked> = past.iter().filter(|a| children.contains(a.name())).collect();
            assert!(
                extra.is_empty(),
                "member {id}: {} of {} writes acknowledged after Z {z} are present, e.g. {:?}",
                extra.len(),
                past.len(),
                &extra[..extra.len().min(5)]
            );
            // Not only the names: the nodes themselves, with the zxids that created them.
            for a in [kept.first(), kept.iter().max_by_key(|a| a.czxid)].into_iter().flatten() {
                let stat = answered("exists", || client.exists(&a.path)).await.expect("exists");
                assert_eq!(stat.map(|s| s.czxid), Some(a.czxid), "member {id}: {} after the restore", a.path);
            }
            let _ = client.close().await;
        }

        for id in restored.ids() {
            let addr = restored.addr(id).parse::<SocketAddr>().expect("member address");
            // "Try another" is allowed while a member catches up; any other answer must be
            // the expiry.
            let answer = wait_for("an answer other than try another", DEADLINE, || resumed(addr, after_backup)).await;
            assert!(
                matches!(answer, Some(ServerMessage::Refused { code: ErrorCode::SessionExpired, .. })),
                "member {id} of the restored ensemble must call session {} expired: {answer:?}",
                after_backup.0
            );
        }

        let client = connect_serving(&restored.connect_string(), Duration::from_secs(10)).await;
        let (_, stat) = client
            .create_with_stat("/after-restore", b"new", CreateMode::Persistent)
            .await
            .expect("a new session writes to the restored ensemble");
        println!("first write on the restored ensemble: czxid {} (Z {z})", stat.czxid);
        let _ = client.close().await;
    })
    .await;
}

// G29: a restored ensemble serves its backup under a new name, so that its members and the
// old ensemble's never mix: a member started with `--ensemble` and `--restore` under the
// backup's own ensemble name (by default, or named) exits non-zero naming `--ensemble-name`,
// and the same start under a new name on the same directory then serves the backup. A
// restore never writes over data: into a directory that holds a server's data, it exits
// non-zero naming the directory and leaves the data as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_is_refused_under_the_backups_own_name_and_over_existing_data() {
    bounded(async {
        let secrets = TempDir::new("restore-secrets");
        let token = token_file(secrets.path(), "admin-token", TOKEN);
        let backup = secrets.path().join("one.backup");

        let mut source = Ensemble::start(1, &["--admin-token-file", &token]).await;
        let client = connect_serving(&source.connect_string(), Duration::from_secs(10)).await;
        answered("create /kept", || client.create("/kept", b"in the backup", CreateMode::Persistent))
            .await
            .expect("create /kept");

        // A wrong token: no backup.
        let wrong = token_file(secrets.path(), "wrong-token", "not-the-admin-token-at-all");
        let admin = source.admin_addr(1).to_string();
        let refused = run_cli(
            &source.connect_string(),
            &[
                "backup",
                path_str(&secrets.path().join("refused.backup")),
                "--admin",
                &admin,
                "--admin-token-file",
                &wrong,
            ],
        )
        .await;
        assert!(!refused.status.success(), "a backup with the wrong token: {refused:?}");

        let text = secrets.path().join("text.backup");
        let out = run_cli(
            &source.connect_string(),
            &["backup", path_str(&text), "--admin", &admin, "--admin-token-file", &token],
        )
        .await
        .success();
        assert_eq!(out.stdout.trim_end().lines().count(), 1, "one line: {:?}", out.stdout);
        assert!(out.stdout.contains(path_str(&text)), "names the file: {:?}", out.stdout);
        let out = run_cli(
            &source.connect_string(),
            &["--output", "json", "backup", path_str(&backup), "--admin", &admin, "--admin-token-file", &token],
        )
        .await
        .success();
        let report: serde_json::Value =
            serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("backup JSON: {e}: {:?}", out.stdout));
        check_report(&report, &backup, "ward");
        let _ = client.close().await;

        // A backup checked where it lies, with no server: whole, it says what it holds; cut
        // short by a byte, it is refused as damaged.
        let checked = run_cli(&source.connect_string(), &["--output", "json", "backup", "--check", path_str(&backup)])
            .await
            .success();
        let checked: serde_json::Value = serde_json::from_str(checked.stdout.trim()).expect("check JSON");
        assert_eq!(checked["zxid"], report["zxid"], "the check reads the backup's zxid");
        let bytes = std::fs::read(&backup).expect("read the backup");
        let cut = secrets.path().join("cut.backup");
        std::fs::write(&cut, &bytes[..bytes.len() - 1]).expect("write a cut copy");
        let refused = run_cli(&source.connect_string(), &["backup", "--check", path_str(&cut)]).await;
        assert!(!refused.status.success(), "a cut backup passed its check: {refused:?}");
        assert!(refused.stderr.contains("cut short"), "says it is cut short: {:?}", refused.stderr);

        // Under the backup's own name, by default and named.
        let fresh = TempDir::new("restore-fresh");
        let data = fresh.path().join("data");
        let peer = ward_testkit::port::stable().expect("a port").to_string();
        let members = format!("1={peer}");
        let as_member = ["--id", "1", "--ensemble", members.as_str(), "--peer-listen", peer.as_str()];
        for name in [None, Some("ward")] {
            let mut flags = as_member.to_vec();
            flags.extend(["--restore", path_str(&backup)]);
            flags.extend(name.iter().flat_map(|n| ["--ensemble-name", *n]));
            let stderr = refused_start(&data, &flags).await;
            assert!(stderr.contains("--ensemble-name"), "{flags:?} must say to pick --ensemble-name:\n{stderr}");
        }
        // The same start under a new name, on the directory the refusals were given.
        let mut flags = as_member.to_vec();
        flags.extend(["--restore", path_str(&backup), "--ensemble-name", "renamed"]);
        let renamed = start_bare(&data, &flags);
        let reader = connect_serving(&renamed.addr_str(), Duration::from_secs(10)).await;
        let (value, _) = answered("get /kept", || reader.get_data("/kept")).await.expect("the backup's node");
        assert_eq!(value, b"in the backup");
        let _ = reader.close().await;
        drop(renamed);

        // Over a server's data: the source's own directory, its server stopped.
        source.member(1).kill9_now();
        let existing = source.member(1).data_dir();
        let listing = list_tree(&existing);
        assert!(!listing.is_empty(), "the source server left data in {}", existing.display());
        let stderr = refused_start(&existing, &["--restore", path_str(&backup)]).await;
        let shown = existing.display().to_string();
        assert!(stderr.contains(&shown), "the refusal must name {shown}:\n{stderr}");
        assert_eq!(list_tree(&existing), listing, "a refused restore changed {shown}");
    })
    .await;
}

/// One acknowledged create: the node's path, its czxid, and which writer made it.
#[derive(Clone, Debug)]
struct Acked {
    writer: usize,
    path: String,
    czxid: Zxid,
}

impl Acked {
    /// The node's name under `/w`.
    fn name(&self) -> &str {
        self.path.trim_start_matches("/w/")
    }
}

/// Creates `/w/W-N` for N = 0, 1, ... one after another until `stop`, recording each
/// acknowledged create. A create that fails is not recorded (it may or may not have been
/// applied) and its name is never tried again.
async fn writer(w: usize, addrs: String, acked: Arc<Mutex<Vec<Acked>>>, stop: Arc<AtomicBool>) {
    let mut client = connect_serving(&addrs, Duration::from_secs(10)).await;
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let path = format!("/w/{w}-{n}");
        n += 1;
        match client.create_with_stat(&path, b"", CreateMode::Persistent).await {
            Ok((path, stat)) => acked.lock().expect("acked").push(Acked { writer: w, path, czxid: stat.czxid }),
            Err(Error::SessionExpired) => client = connect_serving(&addrs, Duration::from_secs(10)).await,
            // Not acknowledged: a short pause before the next one, not a busy loop.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let _ = client.close().await;
}

/// The JSON report of `ward backup` for `file`: its fields, its size, the ensemble's name.
fn check_report(report: &serde_json::Value, file: &Path, ensemble: &str) {
    let size = std::fs::metadata(file).unwrap_or_else(|e| panic!("the backup {}: {e}", file.display())).len();
    assert!(report["zxid"].as_u64().is_some_and(|z| z > 0), "zxid: {report}");
    assert!(report["index"].as_u64().is_some_and(|i| i > 0), "index: {report}");
    assert!(report["term"].as_u64().is_some_and(|t| t > 0), "term: {report}");
    assert_eq!(report["bytes"].as_u64(), Some(size), "bytes, against the file's size: {report}");
    assert_eq!(report["ensemble"].as_str(), Some(ensemble), "{report}");
    let named = report["file"].as_str().unwrap_or_else(|| panic!("file: {report}"));
    assert!(named.ends_with(&*file.file_name().expect("a file name").to_string_lossy()), "file: {report}");
}

/// A token file `dir/name` holding `token`, mode 0600 as the server requires.
fn token_file(dir: &Path, name: &str, token: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("{token}\n")).expect("write the token file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
    path_str(&path).to_string()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A new session opened by hand on the member at `addr`, if it welcomes one now.
async fn opened(addr: SocketAddr) -> Option<(RawConn, ward_proto::Welcome)> {
    let mut conn = frame(raw_connect(addr).await);
    send(&mut conn, ClientMessage::Hello(Hello::new(None, 30_000, 0))).await;
    match recv(&mut conn).await {
        Some(ServerMessage::Welcome(welcome)) => Some((conn, welcome)),
        _ => None,
    }
}

/// The answer of the member at `addr` to resuming `session`; `None` for "try another".
async fn resumed(addr: SocketAddr, session: (SessionId, SessionSecret)) -> Option<Option<ServerMessage>> {
    let mut conn = frame(raw_connect(addr).await);
    send(&mut conn, ClientMessage::Hello(Hello::new(Some(session), 10_000, 0))).await;
    match recv(&mut conn).await {
        Some(ServerMessage::Refused { code: ErrorCode::Unavailable, reason }) => {
            eprintln!("{addr}: {reason}; asking again");
            None
        }
        other => Some(other),
    }
}
