//! Disaster recovery: `ward-server --force-new-ensemble` makes the one surviving member of
//! an ensemble that lost its majority for good the one member of a new ensemble, and members
//! added back on empty directories catch up with it (docs/operations.md, "Losing the
//! majority").

use crate::harness::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::timeout;
use ward_client::{Client, CreateMode, Error, MemberInfo, MemberRole};
use ward_testkit::{member_has, serial, synced, Ensemble};

/// Acknowledged creates made before the majority is lost.
const ACKED: usize = 200;

/// Clients writing at once.
const WRITERS: usize = 4;

/// The new ensemble's name (the old one's is the default, `ward`).
const NEW_NAME: &str = "rescued";

/// Snapshots (and log purges) this often on the old ensemble: the survivor's directory then
/// holds a snapshot and log entries beyond it, both of which the forced start must keep.
const SNAPSHOT_EVERY: &str = "50";

/// An acknowledged create: the node's path and its data.
type Write = (String, Vec<u8>);

// G30: a member forced into a new ensemble after its majority was lost keeps every write its
// log held (every write acknowledged while it was a member of a majority that had it), and
// members added back empty catch up with it.
//
// Four writers have 200 creates acknowledged by a three-member ensemble (snapshotting every
// 50 entries). A follower, the survivor, is seen to serve every one of them; then all three
// are killed with SIGKILL and the other two's data directories deleted. The survivor,
// started once with `--force-new-ensemble --ensemble S=ITS_PEER_ADDR --ensemble-name
// rescued`, is the one member (and leader) of `rescued`, serves every acknowledged write,
// and has kept its directory as it was beside it (`DIR.before-force-MS`). The two lost
// members are added back on empty directories (`--join`, `ward members add`): each then
// serves every acknowledged write through a session on it alone after a sync, and a write
// through the new ensemble is seen by all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_survivor_keeps_every_acknowledged_write_and_members_added_back_catch_up() {
    let _serial = serial().await;
    bounded(async {
        let mut old = Ensemble::start(3, &["--snapshot-every", SNAPSHOT_EVERY]).await;
        let leader = old.leader(&[]).await;
        let acked = write_acknowledged(&old.connect_string()).await;
        println!("{} creates acknowledged by the ensemble of three (leader {leader})", acked.len());

        // Two of the three directories are about to be deleted, so the survivor must hold
        // every acknowledged write by itself. An acknowledged write was on a majority, two of
        // three, which need not include a given follower: so the survivor is chosen only once
        // a synced read through it alone sees every one of them (it has applied them, so its
        // snapshot or its log holds them; a SIGKILL loses nothing already written). No write
        // is in flight from here to the kill.
        let survivor = old.ids().into_iter().find(|&id| id != leader).expect("a follower");
        let lost: Vec<u64> = old.ids().into_iter().filter(|&id| id != survivor).collect();
        let survivor_addr = old.addr(survivor);
        wait_until(&format!("the survivor, member {survivor}, serves every acknowledged write"), DEADLINE, || {
            serves_all(&survivor_addr, &acked)
        })
        .await;
        let data = old.member(survivor).data_dir();
        assert!(data.join("snapshot").exists(), "member {survivor} took no snapshot in {}", data.display());

        for id in old.ids() {
            old.member(id).kill9_now();
        }
        for &id in &lost {
            let gone = old.member(id).data_dir();
            std::fs::remove_dir_all(&gone).unwrap_or_else(|e| panic!("delete {}: {e}", gone.display()));
        }
        println!("all three killed; the directories of members {lost:?} deleted, member {survivor}'s kept");

        // The survivor on its own peer address, as an operator would restart it on its machine.
        let peer = old.peer_addr(survivor).to_string();
        let mut forced = start_bare(&data, &forced_flags(survivor, &[(survivor, peer.as_str())], Some(NEW_NAME)));
        let forced_addr = forced.addr_str();
        let members = members_until(&forced_addr, "the forced member leads an ensemble of one", |m| {
            m.iter().any(|m| m.id == survivor && m.role == MemberRole::Leader)
        })
        .await;
        assert_eq!(members.len(), 1, "the forced ensemble has the survivor alone: {members:?}");
        let said = forced.log_tail();
        let line = said.lines().find(|l| l.contains("forced a new one-member ensemble"));
        println!("forced: {}", line.unwrap_or("(no \"forced a new one-member ensemble\" line in its log)"));
        assert!(line.is_some(), "the forced start says what it kept; its log:\n{said}");
        all_present(&forced_addr, &acked).await;
        let aside = kept_aside(&data);
        assert_eq!(aside.len(), 1, "one directory kept aside beside {}: {aside:?}", data.display());
        assert!(aside[0].join("member").exists(), "the directory as it was, kept at {}", aside[0].display());

        // The lost members come back on empty directories, on their old peer addresses.
        let mut newcomers = Vec::new();
        for &id in &lost {
            let peer = old.peer_addr(id).to_string();
            let join = ["--id", &id.to_string(), "--join", "--peer-listen", &peer, "--ensemble-name", NEW_NAME];
            let newcomer = ServerProcess::builder().flags(&join).start();
            let spec = format!("{id}={peer}");
            let out = run_cli(&forced_addr, &["members", "add", &spec]).await;
            assert!(out.status.success(), "ward members add {spec} through the forced member: {out:?}");
            println!("member {id} added back");
            newcomers.push((id, newcomer));
        }
        let members = members_until(&forced_addr, "three members: the survivor leads, two followers", |m| {
            m.len() == 3
                && m.iter().any(|m| m.id == survivor && m.role == MemberRole::Leader)
                && lost.iter().all(|&id| role_of(m, id) == Some(MemberRole::Follower))
        })
        .await;
        println!("the new ensemble: {members:?}");

        for (id, newcomer) in &newcomers {
            println!("member {id}, added back empty, reads through a session of its own");
            all_present(&newcomer.addr_str(), &acked).await;
        }

        let mut addrs = vec![forced_addr.clone()];
        addrs.extend(newcomers.iter().map(|(_, n)| n.addr_str()));
        let writer = connect_serving(&addrs.join(","), Duration::from_secs(10)).await;
        answered("a write to the new ensemble", || writer.create("/after-force", b"new", CreateMode::Persistent))
            .await
            .expect("a write to the new ensemble");
        let _ = writer.close().await;
        for addr in &addrs {
            wait_until(&format!("{addr} has /after-force"), DEADLINE, || member_has(addr, "/after-force")).await;
        }

        forced.assert_running();
        for (_, newcomer) in &mut newcomers {
            newcomer.assert_running();
        }
    })
    .await
}

// G30: forcing is for one start, of the member the directory belongs to, alone, under a new
// name. On a killed member's directory of a three-member ensemble, `--force-new-ensemble`
// exits non-zero naming `--force-new-ensemble`, leaving the directory as it was, without an
// `--ensemble-name`, under the old name (`ward`), and with an `--ensemble` that names other
// members; with another member's `--id` it exits non-zero naming the member the directory
// belongs to. The same start with a new name then forces it; a second forced start on that
// directory exits non-zero saying it "already belongs to ensemble" `rescued`, leaving it as
// it was, and a plain start of it as member of `rescued` serves the writes it held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forcing_is_refused_without_a_new_name_with_other_members_and_a_second_time() {
    let _serial = serial().await;
    bounded(async {
        let mut old = Ensemble::start(3, &[]).await;
        let client = connect_serving(&old.connect_string(), Duration::from_secs(10)).await;
        let mut acked = Vec::new();
        for i in 0..20 {
            let (path, value) = (format!("/kept-{i}"), format!("kept {i}").into_bytes());
            answered("a create", || client.create(&path, &value, CreateMode::Persistent)).await.expect("create");
            acked.push((path, value));
        }
        let _ = client.close().await;
        for (path, _) in &acked {
            old.wait_all_have(path).await;
        }
        let survivor = old.ids()[0];
        let other = old.ids()[1];
        for id in old.ids() {
            old.member(id).kill9_now();
        }
        let data = old.member(survivor).data_dir();
        let peer = old.peer_addr(survivor).to_string();
        let other_peer = old.peer_addr(other).to_string();
        let alone = [(survivor, peer.as_str())];
        let as_it_was = list_tree(&data);

        let with_others = [(survivor, peer.as_str()), (other, other_peer.as_str())];
        let not_its_own = format!("belongs to member {survivor}");
        let refusals: [(&str, Vec<String>, &str); 4] = [
            ("no --ensemble-name", forced_flags(survivor, &alone, None), "--force-new-ensemble"),
            ("the old name", forced_flags(survivor, &alone, Some("ward")), "needs a new --ensemble-name"),
            (
                "other members in --ensemble",
                forced_flags(survivor, &with_others, Some(NEW_NAME)),
                "--force-new-ensemble",
            ),
            (
                "another member's id",
                forced_flags(other, &[(other, other_peer.as_str())], Some(NEW_NAME)),
                not_its_own.as_str(),
            ),
        ];
        for (what, flags, says) in &refusals {
            let stderr = refused_start(&data, flags).await;
            println!("refused ({what}): {}", stderr.trim());
            assert!(stderr.contains(says), "a forced start with {what} must say {says:?}:\n{stderr}");
            assert_eq!(list_tree(&data), as_it_was, "a forced start refused ({what}) changed {}", data.display());
            assert!(kept_aside(&data).is_empty(), "a forced start refused ({what}) moved {}", data.display());
        }

        let mut forced = start_bare(&data, &forced_flags(survivor, &alone, Some(NEW_NAME)));
        all_present(&forced.addr_str(), &acked).await;
        forced.kill9_now();
        assert_eq!(kept_aside(&data).len(), 1, "one directory kept aside beside {}", data.display());

        let forced_once = list_tree(&data);
        let stderr = refused_start(&data, &forced_flags(survivor, &alone, Some(NEW_NAME))).await;
        println!("refused (a second time): {}", stderr.trim());
        let says = format!("already belongs to ensemble \"{NEW_NAME}\"");
        assert!(stderr.contains(&says), "a second forced start must say {says:?}:\n{stderr}");
        assert_eq!(list_tree(&data), forced_once, "a second forced start, refused, changed {}", data.display());
        assert_eq!(kept_aside(&data).len(), 1, "a second forced start, refused, moved {}", data.display());

        let mut plain = member_flags(survivor, &alone);
        plain.extend(["--ensemble-name".to_string(), NEW_NAME.to_string()]);
        let again = start_bare(&data, &plain);
        all_present(&again.addr_str(), &acked).await;
    })
    .await
}

/// Creates nodes under `/acked` from [`WRITERS`] clients of `addrs` until [`ACKED`] are
/// acknowledged; returns every acknowledged one. A create that fails is not recorded (it
/// may or may not have been applied) and its path is never tried again.
async fn write_acknowledged(addrs: &str) -> Vec<Write> {
    let setup = connect_serving(addrs, Duration::from_secs(10)).await;
    match answered("create /acked", || setup.create("/acked", b"", CreateMode::Persistent)).await {
        Ok(_) | Err(Error::NodeExists) => {}
        Err(e) => panic!("create /acked: {e:?}"),
    }
    let _ = setup.close().await;
    let acked: Arc<Mutex<Vec<Write>>> = Arc::default();
    let (count, done) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let client = connect_serving(addrs, Duration::from_secs(10)).await;
        let (acked, count, done) = (acked.clone(), count.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0.. {
                if done.load(Ordering::SeqCst) {
                    break;
                }
                let (path, data) = (format!("/acked/w{w}-{i}"), format!("{w}:{i}").into_bytes());
                match timeout(Duration::from_secs(15), client.create(&path, &data, CreateMode::Persistent)).await {
                    Ok(Ok(_)) => {
                        acked.lock().expect("acked").push((path, data));
                        if count.fetch_add(1, Ordering::SeqCst) + 1 >= ACKED {
                            done.store(true, Ordering::SeqCst);
                        }
                    }
                    // Paced: a client that is reconnecting fails at once.
                    _ => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
            let _ = timeout(Duration::from_secs(5), client.close()).await;
        }));
    }
    for task in tasks {
        within("a writer finishes", DEADLINE * 2, task).await.expect("writer task");
    }
    let acked = std::mem::take(&mut *acked.lock().expect("acked"));
    assert!(acked.len() >= ACKED, "{} creates acknowledged, {ACKED} wanted", acked.len());
    acked
}

/// Whether the member at `addr`, through a session on it alone synced with its leader,
/// serves every write of `acked` (by name; [`all_present`] checks the data).
async fn serves_all(addr: &str, acked: &[Write]) -> bool {
    let Some(client) = synced(addr).await else { return false };
    let children = timeout(Duration::from_secs(5), client.get_children("/acked")).await;
    let _ = timeout(Duration::from_secs(5), client.close()).await;
    let Ok(Ok(children)) = children else { return false };
    let children: BTreeSet<String> = children.into_iter().collect();
    acked.iter().all(|(path, _)| children.contains(path.trim_start_matches("/acked/")))
}

/// Through a session on the member at `addr` alone: `sync`, then every write of `acked`
/// reads back as written.
async fn all_present(addr: &str, acked: &[Write]) {
    let client = member_client(addr).await;
    answered("sync", || client.sync("/")).await.unwrap_or_else(|e| panic!("sync through {addr}: {e:?}"));
    let mut missing = Vec::new();
    for (path, data) in acked {
        match answered("get", || client.get_data(path)).await {
            Ok((read, _)) => assert_eq!(&read, data, "{path} through {addr}"),
            Err(Error::NoNode) => missing.push(path.as_str()),
            Err(e) => panic!("read {path} through {addr}: {e:?}"),
        }
    }
    let _ = client.close().await;
    assert!(
        missing.is_empty(),
        "{addr}: {} of {} acknowledged writes missing after a sync, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
}

/// A client of the member at `addr` alone, once it takes a session (it takes none until it
/// is in contact with a leader).
async fn member_client(addr: &str) -> Client {
    wait_for(&format!("member {addr} takes a session"), DEADLINE, || async {
        let connecting = Client::builder(addr).connect_timeout(Duration::from_secs(2)).connect();
        timeout(Duration::from_secs(5), connecting).await.ok()?.ok()
    })
    .await
}

/// The member list as the member at `addr` gives it, once `ok` holds for it.
async fn members_until(addr: &str, what: &str, ok: impl Fn(&[MemberInfo]) -> bool) -> Vec<MemberInfo> {
    wait_for(what, DEADLINE, || async {
        let client =
            timeout(Duration::from_secs(5), Client::builder(addr).connect_timeout(Duration::from_secs(2)).connect());
        let client = client.await.ok()?.ok()?;
        let members = timeout(Duration::from_secs(5), client.members()).await.ok().and_then(Result::ok);
        let _ = timeout(Duration::from_secs(5), client.close()).await;
        members.filter(|m| ok(m))
    })
    .await
}

fn role_of(members: &[MemberInfo], id: u64) -> Option<MemberRole> {
    members.iter().find(|m| m.id == id).map(|m| m.role)
}

/// `--id ID --ensemble MEMBERS --peer-listen` (`id`'s address in `members`).
fn member_flags(id: u64, members: &[(u64, &str)]) -> Vec<String> {
    let list = members.iter().map(|(m, a)| format!("{m}={a}")).collect::<Vec<_>>().join(",");
    let own = members.iter().find(|(m, _)| *m == id).map_or(members[0].1, |(_, a)| *a);
    ["--id", &id.to_string(), "--ensemble", &list, "--peer-listen", own].map(String::from).to_vec()
}

/// [`member_flags`] with `--force-new-ensemble` and, if given, `--ensemble-name NAME`.
fn forced_flags(id: u64, members: &[(u64, &str)], name: Option<&str>) -> Vec<String> {
    let mut flags = member_flags(id, members);
    flags.push("--force-new-ensemble".into());
    flags.extend(name.into_iter().flat_map(|n| ["--ensemble-name".to_string(), n.to_string()]));
    flags
}

/// The directories kept beside `data` by forced starts (`DATA.before-force-MS`).
fn kept_aside(data: &Path) -> Vec<PathBuf> {
    let prefix = format!("{}.before-force-", data.file_name().expect("a name").to_string_lossy());
    let parent = data.parent().expect("a parent");
    let mut kept: Vec<PathBuf> = std::fs::read_dir(parent)
        .unwrap_or_else(|e| panic!("list {}: {e}", parent.display()))
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    kept.sort();
    kept
}
