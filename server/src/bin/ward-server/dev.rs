//! `ward-server --dev-ensemble N`: a local ensemble of N members in one command, for trying
//! Ward out and for development. Each member is a child process of this one, on consecutive
//! ports from the `--listen` port (ZooKeeper clients from 2181 on, peers from the `--listen`
//! port + 10, the admin listener from an explicit `--admin-listen` port, else none: the
//! default 7180 and up would meet the client ports), with its data in `DIR/<id>` and its log in `DIR/<id>.log`. Ctrl-C stops them
//! all; starting again with the same directory resumes the same ensemble.

use super::args::Args;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

/// Runs the members until a signal or until one of them stops.
pub async fn run(n: u16, args: &Args) -> Result<(), String> {
    let root = args.data_dir.clone().unwrap_or_else(|| "ward-dev".into());
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let (ip, base) = (args.listen.ip(), args.listen.port());
    let port = |base: u16, i: u16| -> Result<SocketAddr, String> {
        let p = base.checked_add(i - 1).ok_or("ports run past 65535: choose a lower --listen port")?;
        Ok(SocketAddr::new(ip, p))
    };
    let peer_base = base.checked_add(10).ok_or("--listen port too high")?;
    let members: Vec<String> =
        (1..=n).map(|i| port(peer_base, i).map(|a| format!("{i}={a}"))).collect::<Result<_, _>>()?;
    let members = members.join(",");
    let mut children: Vec<Child> = Vec::new();
    let mut clients = Vec::new();
    let mut zk = Vec::new();
    let mut admin = Vec::new();
    for i in 1..=n {
        let log = std::fs::File::create(root.join(format!("{i}.log"))).map_err(|e| format!("log file: {e}"))?;
        let mut cmd = Command::new(&exe);
        cmd.args(["--id", &i.to_string(), "--ensemble", &members])
            .args(["--listen", &port(base, i)?.to_string()])
            .arg("--data-dir")
            .arg(root.join(i.to_string()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true);
        match args.zk_listen {
            Some((zk_addr, _)) => cmd.args(["--zk-listen", &port(zk_addr.port(), i).map(|a| a.to_string())?]),
            None => cmd.args(["--zk-listen", "off"]),
        };
        match args.admin_listen {
            Some((admin, true)) => cmd.args(["--admin-listen", &port(admin.port(), i).map(|a| a.to_string())?]),
            _ => cmd.args(["--admin-listen", "off"]),
        };
        let mut child = cmd.spawn().map_err(|e| format!("starting member {i}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let with_admin = matches!(args.admin_listen, Some((_, true)));
        let banner = read_banner(stdout, i, &root, with_admin).await?;
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
        status = stopped => Err(format!("a member stopped ({status:?}); see its log in {}", root.display())),
    };
    for child in &mut children {
        terminate(child).await;
    }
    result
}

/// The member's banner lines: its client address, and its ZooKeeper and admin addresses
/// if any (the admin line, when `admin`, comes last).
async fn read_banner(
    stdout: tokio::process::ChildStdout,
    i: u16,
    root: &Path,
    admin: bool,
) -> Result<(String, Option<String>, Option<String>), String> {
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
        None => Err(format!("member {i} did not start; see {}/{i}.log", root.display())),
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
