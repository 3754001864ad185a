//! A server started by hand on a data directory of the test's own, outside any ensemble the
//! harness runs: its bare flags, a start it must refuse, and the files a refusal must leave
//! as they were.

use crate::run::try_run;
use crate::{locate, ServerProcess, DEADLINE};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A server's own flags on `data`: the client listener on any port, no other listener,
/// small log segments, no per-address connection limit.
pub fn bare_flags(data: &Path) -> Vec<String> {
    let data = data.to_str().expect("a UTF-8 path");
    [
        "--data-dir",
        data,
        "--listen",
        "127.0.0.1:0",
        "--zk-listen",
        "off",
        "--admin-listen",
        "off",
        "--segment-mb",
        "1",
        "--max-connections-per-ip",
        "0",
    ]
    .map(String::from)
    .to_vec()
}

/// A server on `data` started with [`bare_flags`] and `flags` (none of the harness's own);
/// panics with its stderr unless it listens.
pub fn start_bare(data: &Path, flags: &[impl AsRef<str>]) -> ServerProcess {
    let bare = bare_flags(data);
    let all: Vec<&str> = bare.iter().map(String::as_str).chain(flags.iter().map(AsRef::as_ref)).collect();
    ServerProcess::builder().bare().flags(&all).start()
}

/// Runs `ward-server` on `data` with [`bare_flags`] and `flags` to its exit; it must refuse
/// to start (exit non-zero without listening, and not by a panic). Returns its stderr.
pub async fn refused_start(data: &Path, flags: &[impl AsRef<str>]) -> String {
    let flags: Vec<String> = flags.iter().map(|f| f.as_ref().to_string()).collect();
    let mut cmd = Command::new(locate::server_binary());
    for (var, _) in std::env::vars_os() {
        if var.to_string_lossy().starts_with("WARD_") {
            cmd.env_remove(var);
        }
    }
    cmd.args(bare_flags(data)).args(&flags);
    let what = format!("ward-server {flags:?}");
    let out = tokio::task::spawn_blocking(move || try_run(&mut cmd, b"", DEADLINE))
        .await
        .expect("join")
        .unwrap_or_else(|why| panic!("{what} did not refuse: {why}"));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(!out.status.success(), "{what} must exit non-zero; stderr:\n{stderr}");
    assert!(!stdout.contains("listening on"), "{what} listened:\n{stdout}");
    assert!(!stderr.contains("panicked"), "{what}: a refusal is an error, not a panic:\n{stderr}");
    stderr
}

/// Every file under `dir` with its size.
pub fn list_tree(dir: &Path) -> BTreeMap<PathBuf, u64> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap_or_else(|e| panic!("list {}: {e}", at.display())).flatten() {
            let meta = entry.metadata().expect("metadata");
            match meta.is_dir() {
                true => todo.push(entry.path()),
                false => drop(files.insert(entry.path(), meta.len())),
            }
        }
    }
    files
}
