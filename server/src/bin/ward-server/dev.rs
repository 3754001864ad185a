//! `ward-server --dev-ensemble N`: a local ensemble of N members in one command, for trying
//! Ward out and for development. Each member is a child process of this one, on consecutive
//! ports from the `--listen` port (ZooKeeper clients from 2181 on, or from `--zk-tls-listen`'s
//! port for the secure port, peers from the `--listen` port + 10, the admin listener and web console from an explicit `--admin-listen` port, else from the `--listen` port + 20: the
//! default 7180 and up would meet the client ports), with its data in `DIR/<id>` and its log
//! in `DIR/<id>.log`; the other options (session timeouts, snapshots, log format, ...) are
//! passed on to every member. A member that stops (killed, say, to watch a failover) is
//! reported and the others keep serving; `restart ID` on stdin starts it again. Ctrl-C stops
//! them all; starting again with the same directory resumes the same ensemble.

use crate::args::settings::{env_var, keys};
use crate::args::Args;
use std::io::BufRead;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

#[derive(Debug, thiserror::Error)]
pub enum DevError {
    #[error("--dev-ensemble: {what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
    #[error("--dev-ensemble: ports run past 65535: choose a lower --listen port")]
    Ports,
    #[error("--dev-ensemble: member {id} did not start; see {}/{id}.log", root.display())]
    MemberDidNotStart { id: u16, root: PathBuf },
}

/// One member: how to start it, and the process while it runs.
struct Member {
    id: u16,
    /// Its command line, the same at every start.
    args: Vec<String>,
    child: Option<Child>,
}

/// What a member prints when it listens.
struct Banner {
    client: String,
    zk: Option<String>,
    admin: Option<String>,
}

/// Runs the members until a signal. A member that stops is reported, the others keep
/// serving, and `restart [ID]` on stdin starts it again.
pub async fn run(n: u16, args: &Args) -> Result<(), DevError> {
    let root = args.data_dir.clone().unwrap_or_else(|| "ward-dev".into());
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
    // The admin listener (metrics and the web console) from an explicit port, else from the
    // client port + 20 (the default 7180 and up would meet the client ports); off if asked.
    let admin_base = match &args.admin_listen {
        Some(a) if a.explicit => a.addrs.first().map(|a| a.port()),
        Some(_) => Some(base.checked_add(20).ok_or(DevError::Ports)?),
        None => None,
    };
    let mut running = Vec::new();
    let mut banners = Vec::new();
    for i in 1..=n {
        // A new log per run; a member started again appends to it.
        let log_path = root.join(format!("{i}.log"));
        std::fs::File::create(&log_path).map_err(io("creating", &log_path))?;
        let mut member_args = passed_on(args);
        member_args.extend(["--id".into(), i.to_string(), "--ensemble".into(), members.clone()]);
        member_args.extend(["--listen".into(), port(base, i)?.to_string()]);
        member_args.extend(["--data-dir".into(), root.join(i.to_string()).display().to_string()]);
        match args.zk_listen.as_ref().and_then(|l| l.addrs.first()) {
            Some(zk_addr) => member_args.extend(["--zk-listen".into(), port(zk_addr.port(), i)?.to_string()]),
            None => member_args.extend(["--zk-listen".into(), "off".into()]),
        }
        if let Some(zk_tls) = args.zk_tls_listen.as_ref().and_then(|l| l.addrs.first()) {
            member_args.extend(["--zk-tls-listen".into(), port(zk_tls.port(), i)?.to_string()]);
        }
        match admin_base {
            Some(admin) => member_args.extend(["--admin-listen".into(), port(admin, i)?.to_string()]),
            None => member_args.extend(["--admin-listen".into(), "off".into()]),
        }
        let mut member = Member { id: i, args: member_args, child: None };
        banners.push(member.start(&exe, args, &root, admin_base.is_some()).await?);
        running.push(member);
    }
    print_banner(n, &running, &banners, &root);
    let mut stdin = Some(stdin_lines());
    let shutdown = super::shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            (i, status) = any_stops(&mut running) => say(&stopped(&running, i, &status, &root)),
            line = next_line(&mut stdin) => match line {
                Some(line) => restart(&mut running, line.trim(), &exe, args, &root, admin_base.is_some()).await,
                // No input to read (stdin closed, or not a terminal's): the members go on.
                None => stdin = None,
            },
        }
    }
    for member in &mut running {
        if let Some(child) = member.child.as_mut() {
            terminate(child).await;
        }
    }
    Ok(())
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> DevError {
    let path = path.to_path_buf();
    move |source| DevError::Io { what, path, source }
}

impl Member {
    /// Starts the member's process and waits for its banner.
    async fn start(&mut self, exe: &Path, args: &Args, root: &Path, admin: bool) -> Result<Banner, DevError> {
        let log_path = root.join(format!("{}.log", self.id));
        let log =
            std::fs::OpenOptions::new().create(true).append(true).open(&log_path).map_err(io("opening", &log_path))?;
        let mut cmd = Command::new(exe);
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
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(io("starting", exe))?;
        let did_not_start = || DevError::MemberDidNotStart { id: self.id, root: root.to_path_buf() };
        let stdout = child.stdout.take().ok_or_else(did_not_start)?;
        let banner = read_banner(stdout, admin).await.ok_or_else(did_not_start)?;
        self.child = Some(child);
        Ok(banner)
    }
}

fn print_banner(n: u16, members: &[Member], banners: &[Banner], root: &Path) {
    let mut out = std::io::stdout().lock();
    let clients: Vec<&str> = banners.iter().map(|b| b.client.as_str()).collect();
    let _ = writeln!(out, "ward-server ensemble of {n} listening on {}", clients.join(","));
    let zk: Vec<&str> = banners.iter().filter_map(|b| b.zk.as_deref()).collect();
    if !zk.is_empty() {
        let _ = writeln!(out, "ward-server zookeeper clients: {}", zk.join(","));
    }
    let admin: Vec<&str> = banners.iter().filter_map(|b| b.admin.as_deref()).collect();
    if let Some(first) = admin.first() {
        let _ = writeln!(out, "ward-server admin (metrics): {}", admin.join(","));
        let _ = writeln!(out, "web console: http://{first}/ (every member serves one)");
    }
    for (member, banner) in members.iter().zip(banners) {
        let pid = member.child.as_ref().and_then(Child::id).map_or_else(|| "?".into(), |p| p.to_string());
        let _ = writeln!(out, "member {}: pid {pid}, clients {}", member.id, banner.client);
    }
    let _ = writeln!(
        out,
        "data and logs in {} (Ctrl-C stops every member; a member that stops is started again with `restart ID` here)",
        root.display()
    );
    let _ = out.flush();
}

fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// The first running member to stop, and how it stopped; it is then no longer running.
/// Never resolves while none runs.
async fn any_stops(members: &mut [Member]) -> (usize, String) {
    let waits: Vec<_> = members
        .iter_mut()
        .enumerate()
        .filter_map(|(i, m)| m.child.as_mut().map(|c| Box::pin(async move { (i, c.wait().await) })))
        .collect();
    if waits.is_empty() {
        return std::future::pending().await;
    }
    let ((i, status), _, _) = futures_util::future::select_all(waits).await;
    members[i].child = None;
    (i, status.map_or_else(|e| e.to_string(), |s| s.to_string()))
}

/// What to tell the user when member `i` stopped.
fn stopped(members: &[Member], i: usize, status: &str, root: &Path) -> String {
    let id = members[i].id;
    let up = members.iter().filter(|m| m.child.is_some()).count();
    let majority = members.len() / 2 + 1;
    let serving = match up >= majority {
        true => format!("the other {up} keep serving"),
        false => format!(
            "only {up} of {} run, fewer than a majority ({majority}): writes wait until one is back",
            members.len()
        ),
    };
    format!(
        "member {id} stopped ({status}); {serving}. To start it again, type `restart {id}` and Enter here \
         (its log: {}).",
        root.join(format!("{id}.log")).display()
    )
}

/// Stdin's lines, read on a thread of its own: a read of stdin cannot be cancelled, and on
/// the runtime's blocking pool it would keep the process from exiting after Ctrl-C until
/// the next line came. The thread ends with the process.
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    let reader = move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    };
    // Without the thread there are no commands, and the members run on all the same.
    let _ = std::thread::Builder::new().name("ward-dev-stdin".into()).spawn(reader);
    rx
}

/// The next line on stdin, or `None` once there is none to read. Never resolves without stdin.
async fn next_line(stdin: &mut Option<mpsc::UnboundedReceiver<String>>) -> Option<String> {
    match stdin {
        Some(lines) => lines.recv().await,
        None => std::future::pending().await,
    }
}

/// `restart` (every stopped member) or `restart ID`; anything else gets a hint.
async fn restart(members: &mut [Member], line: &str, exe: &Path, args: &Args, root: &Path, admin: bool) {
    let mut words = line.split_whitespace();
    let wanted = match (words.next(), words.next().map(str::parse::<u16>)) {
        (None, _) => return,
        (Some("restart"), None) => None,
        (Some("restart"), Some(Ok(id))) => Some(id),
        _ => return say("commands: `restart` (every stopped member) or `restart ID`; Ctrl-C stops the ensemble"),
    };
    let mut any = false;
    for member in members.iter_mut().filter(|m| m.child.is_none() && wanted.is_none_or(|id| id == m.id)) {
        any = true;
        match member.start(exe, args, root, admin).await {
            Ok(banner) => say(&format!("member {} is back: clients {}", member.id, banner.client)),
            Err(e) => say(&format!("member {} did not start again: {e}", member.id)),
        }
    }
    if !any {
        say(&match wanted {
            Some(id) => format!("member {id} is not a stopped member of this ensemble"),
            None => "every member runs".to_string(),
        });
    }
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
        ("lease-read", s.lease_read.map(|b| b.to_string())),
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
/// if any (the admin line, when `admin`, comes last); `None` if it ended without them.
async fn read_banner(stdout: tokio::process::ChildStdout, admin: bool) -> Option<Banner> {
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
    Some(Banner { client: client?, zk, admin: admin_addr })
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
