//! `ward-server --dev-ensemble N`: a local ensemble of N members in one command, for trying
//! Ward out and for development. Each member is a child process of this one, on consecutive
//! ports from the `--listen` port (ZooKeeper clients from 2181 on, or from `--zk-tls-listen`'s
//! port for the secure port, peers from the `--listen` port + 10, the admin listener from an explicit `--admin-listen` port, else none: the
//! default 7180 and up would meet the client ports), with its data in `DIR/<id>` and its log
//! in `DIR/<id>.log`; the other options (session timeouts, snapshots, log format, ...) are
//! passed on to every member. Ctrl-C stops them all; starting again with the same directory
//! resumes the same ensemble.

use crate::args::settings::{env_var, keys};
use crate::args::Args;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

#[derive(Debug, thiserror::Error)]
pub enum DevError {
    #[error("--dev-ensemble: {what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
    #[error("--dev-ensemble: ports run past 65535: choose a lower --listen port")]
    Ports,
    #[error("--dev-ensemble: member {id} did not start; see {}/{id}.log", root.display())]
    MemberDidNotStart { id: u16, root: PathBuf },
    #[error("--dev-ensemble: a member stopped ({status}); see its log in {}", root.display())]
    MemberStopped { status: String, root: PathBuf },
}

/// Runs the members until a signal or until one of them stops.
pub async fn run(n: u16, args: &Args) -> Result<(), DevError> {
    let root = args.data_dir.clone().unwrap_or_else(|| "ward-dev".into());
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| DevError::Io { what, path, source }
    };
    std::fs::create_dir_all(&root).map_err(io("creating", &root))?;
    let exe = std::env::current_exe().map_err(io("finding this program", Path::new("")))?;
    let first = args.listen.addrs.first().copied().unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 7181)));
    let (ip, base) = (first.ip(), first.port());
    let port = |base: u16, i: u16| -> Result<SocketAddr, DevError> {
        let p = base.checked_add(i - 1).ok_or(DevError::Ports)?;
        Ok(SocketAddr::new(ip, p))
    };
    let peer_base = base.checked_add(10).ok_or(DevError::Ports)?;
    let members: Vec<String> =
        (1..=n).map(|i| port(peer_base, i).map(|a| format!("{i}={a}"))).collect::<Result<_, _>>()?;
    let members = members.join(",");
    let admin_base = args.admin_listen.as_ref().filter(|a| a.explicit).and_then(|a| a.addrs.first()).map(|a| a.port());
    let mut children: Vec<Child> = Vec::new();
    let mut clients = Vec::new();
    let mut zk = Vec::new();
    let mut admin = Vec::new();
    for i in 1..=n {
        let log_path = root.join(format!("{i}.log"));
        let log = std::fs::File::create(&log_path).map_err(io("creating", &log_path))?;
        let mut cmd = Command::new(&exe);
        // The members get every option as a flag; the variables and file this process read
        // would set --dev-ensemble again.
        for key in keys() {
            cmd.env_remove(env_var(&key));
        }
        // The super digest goes by the environment: a command line is for anyone to list.
        if let Some(digest) = &args.settings.super_digest {
            cmd.env(env_var("super-digest"), &digest.0);
        }
        cmd.env_remove("WARD_CONFIG")
            .args(passed_on(args))
            .args(["--id", &i.to_string(), "--ensemble", &members])
            .args(["--listen", &port(base, i)?.to_string()])
            .arg("--data-dir")
            .arg(root.join(i.to_string()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true);
        match args.zk_listen.as_ref().and_then(|l| l.addrs.first()) {
            Some(zk_addr) => cmd.args(["--zk-listen", &port(zk_addr.port(), i)?.to_string()]),
            None => cmd.args(["--zk-listen", "off"]),
        };
        if let Some(zk_tls) = args.zk_tls_listen.as_ref().and_then(|l| l.addrs.first()) {
            cmd.args(["--zk-tls-listen", &port(zk_tls.port(), i)?.to_string()]);
        }
        match admin_base {
            Some(admin) => cmd.args(["--admin-listen", &port(admin, i)?.to_string()]),
            None => cmd.args(["--admin-listen", "off"]),
        };
        let mut child = cmd.spawn().map_err(io("starting", &exe))?;
        let stdout = child.stdout.take().ok_or(DevError::MemberDidNotStart { id: i, root: root.clone() })?;
        let banner = read_banner(stdout, i, &root, admin_base.is_some()).await?;
        clients.push(banner.0);
        zk.extend(banner.1);
        admin.extend(banner.2);
        children.push(child);
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ward-server ensemble of {n} listening on {}", clients.join(","));
    if !zk.is_empty() {
        let _ = writeln!(out, "ward-server zookeeper clients: {}", zk.join(","));
    }
    if !admin.is_empty() {
        let _ = writeln!(out, "ward-server admin (metrics): {}", admin.join(","));
    }
    let _ = writeln!(out, "data and logs in {} (Ctrl-C stops every member)", root.display());
    let _ = out.flush();
    drop(out);
    let stopped = async {
        let waits = children.iter_mut().map(|c| Box::pin(c.wait()));
        futures_util::future::select_all(waits).await.0
    };
    let result = tokio::select! {
        _ = super::shutdown_signal() => Ok(()),
        status = stopped => Err(DevError::MemberStopped {
            status: status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            root: root.clone(),
        }),
    };
    for child in &mut children {
        terminate(child).await;
    }
    result
}

/// The options every member runs with as this process was given them (the ones that are
/// not per member).
fn passed_on(args: &Args) -> Vec<String> {
    let s = &args.settings;
    let options = [
        ("segment-mb", s.segment_mb.map(|n| n.to_string())),
        ("snapshot-log-percent", s.snapshot_log_percent.map(|n| n.to_string())),
        ("snapshot-every", s.snapshot_every.map(|n| n.to_string())),
        ("accept-data-loss", s.accept_data_loss.map(|b| b.to_string())),
        ("min-session-timeout-ms", s.min_session_timeout_ms.map(|n| n.to_string())),
        ("max-session-timeout-ms", s.max_session_timeout_ms.map(|n| n.to_string())),
        ("container-check-interval-ms", s.container_check_interval_ms.map(|n| n.to_string())),
        ("container-max-never-used-ms", s.container_max_never_used_ms.map(|n| n.to_string())),
        ("ensemble-name", s.ensemble_name.clone()),
        ("heartbeat-ms", s.heartbeat_ms.map(|n| n.to_string())),
        ("election-timeout-ms", s.election_timeout_ms.map(|n| n.to_string())),
        ("log-format", s.log_format.map(|f| f.to_string())),
        ("metrics-max-locks", s.metrics_max_locks.map(|n| n.to_string())),
        ("max-outbound-bytes", s.max_outbound_bytes.map(|n| n.to_string())),
        ("watch-history-bytes", s.watch_history_bytes.map(|n| n.to_string())),
        ("max-connections", s.max_connections.map(|n| n.to_string())),
        ("max-connections-per-ip", s.max_connections_per_ip.map(|n| n.to_string())),
        ("worker-threads", s.worker_threads.map(|n| n.to_string())),
        ("admin-token-file", s.admin_token_file.as_deref().map(absolute)),
        ("max-in-flight-per-connection", s.max_in_flight_per_connection.map(|n| n.to_string())),
        ("tls-cert", s.tls_cert.as_deref().map(absolute)),
        ("tls-key", s.tls_key.as_deref().map(absolute)),
        ("tls-client-ca", s.tls_client_ca.as_deref().map(absolute)),
        ("tls-client-auth", s.tls_client_auth.map(|m| m.to_string())),
        ("peer-tls-cert", s.peer_tls_cert.as_deref().map(absolute)),
        ("peer-tls-key", s.peer_tls_key.as_deref().map(absolute)),
        ("peer-tls-ca", s.peer_tls_ca.as_deref().map(absolute)),
    ];
    options.into_iter().filter_map(|(key, value)| Some(format!("--{key}={}", value?))).collect()
}

/// The member's banner lines: its client address, and its ZooKeeper and admin addresses
/// if any (the admin line, when `admin`, comes last).
async fn read_banner(
    stdout: tokio::process::ChildStdout,
    i: u16,
    root: &Path,
    admin: bool,
) -> Result<(String, Option<String>, Option<String>), DevError> {
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let (mut client, mut zk, mut admin_addr) = (None, None, None);
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(a) = line.strip_prefix("ward-server listening on ") {
            client = Some(a.to_string());
        } else if let Some(a) = line.strip_prefix("ward-server zookeeper listening on ") {
            zk = Some(a.to_string());
        } else if let Some(a) = line.strip_prefix("ward-server admin listening on ") {
            admin_addr = Some(a.to_string());
            break;
        } else if line.starts_with("ward-server peer listening on ") && !admin {
            break;
        }
    }
    // Keep draining, so that the member never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    match client {
        Some(client) => Ok((client, zk, admin_addr)),
        None => Err(DevError::MemberDidNotStart { id: i, root: root.to_path_buf() }),
    }
}

/// SIGTERM, so the member stops cleanly; SIGKILL if it does not within a few seconds.
async fn terminate(child: &mut Child) {
    if let Some(pid) = child.id() {
        let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status().await;
        if tokio::time::timeout(std::time::Duration::from_secs(5), child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.kill().await;
}

/// Paths passed on to the members are made absolute: they run in directories of their own.
fn absolute(path: &std::path::Path) -> String {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}
