//! What the benchmark reads about the server processes: RSS from /proc, the PID behind a
//! listening port, a JVM's live heap through `jcmd`, ZooKeeper's `mntr` counters.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::Command;
use std::time::Duration;

/// Resident set size of `pid` in bytes (VmRSS of /proc/PID/status).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    status_bytes(pid, "VmRSS:")
}

/// The peak resident set size of `pid` in bytes (VmHWM of /proc/PID/status).
pub fn peak_rss_bytes(pid: u32) -> Option<u64> {
    status_bytes(pid, "VmHWM:")
}

/// A field of /proc/PID/status given in kB, in bytes.
fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The PID of the process listening on `addr`'s TCP port (found through /proc/net/tcp and
/// the processes' socket descriptors), if this user can see it.
pub fn pid_listening_on(addr: &str) -> Option<u32> {
    let sock: SocketAddr = addr.to_socket_addrs().ok()?.next()?;
    let port = sock.port();
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 10 || cols[3] != "0A" {
                continue; // not LISTEN
            }
            let local_port = cols[1].rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) {
                inodes.push(format!("socket:[{}]", cols[9]));
            }
        }
    }
    if inodes.is_empty() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if inodes.iter().any(|i| target.as_os_str() == i.as_str()) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

/// A JVM's heap in use right after a full GC (`jcmd PID GC.run`, then `GC.heap_info`), in
/// bytes; `None` if jcmd is missing or its output is not understood.
pub fn jvm_live_heap(pid: u32) -> Option<u64> {
    let run = |what: &str| Command::new("jcmd").arg(pid.to_string()).arg(what).output().ok();
    // Two collections: the first may leave objects that only became garbage during it.
    for _ in 0..2 {
        let out = run("GC.run")?;
        if !out.status.success() {
            return None;
        }
    }
    let out = run("GC.heap_info")?;
    let text = String::from_utf8_lossy(&out.stdout);
    // " garbage-first heap   total 389120K, used 18069K [...]"
    let line = text.lines().find(|l| l.contains(" heap ") && l.contains("used "))?;
    let used = line.split("used ").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?;
    let kib: u64 = used.parse().ok()?;
    Some(kib * 1024)
}

/// ZooKeeper's `mntr` four-letter word as a map (needs `4lw.commands.whitelist`).
pub fn zk_mntr(addr: &str) -> Option<HashMap<String, String>> {
    let text = zk_word(addr, "mntr")?;
    let map: HashMap<String, String> = text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    if map.is_empty() {
        None
    } else {
        Some(map)
    }
}

/// ZooKeeper's reply to a four-letter word (`mntr`, `srvr`), if it answered.
pub fn zk_word(addr: &str, word: &str) -> Option<String> {
    let sock: SocketAddr = addr.to_socket_addrs().ok()?.next()?;
    let mut stream = TcpStream::connect_timeout(&sock, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream.write_all(word.as_bytes()).ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    Some(text)
}

/// One numeric `mntr` counter.
pub fn zk_counter(addr: &str, key: &str) -> Option<f64> {
    zk_mntr(addr)?.get(key)?.parse().ok()
}
