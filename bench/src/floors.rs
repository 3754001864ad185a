//! What no coordination service can beat on this machine: a loopback TCP round trip, one
//! 4 KiB write + fdatasync, and the two in sequence as a lone durable request makes them (a
//! request over loopback, a 4 KiB write + fdatasync where it arrives, the reply).
//!
//! The last one is the floor of a lone write: syncs back to back (the second figure) take
//! less than a sync after the pause a round trip leaves, on this machine's disk.

use crate::stats::{Figures, Samples};
use crate::sys::Result;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Round trips of 64 bytes over loopback TCP between two tasks of this runtime.
pub async fn loopback(rounds: usize) -> Result<Samples> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let echo = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await?;
        sock.set_nodelay(true)?;
        let mut buf = [0u8; 64];
        loop {
            if sock.read_exact(&mut buf).await.is_err() {
                return Ok::<_, std::io::Error>(());
            }
            sock.write_all(&buf).await?;
        }
    });
    let mut sock = tokio::net::TcpStream::connect(addr).await?;
    sock.set_nodelay(true)?;
    let mut buf = [7u8; 64];
    let mut lat = Samples::with_capacity(rounds);
    for i in 0..rounds + rounds / 10 {
        let t0 = Instant::now();
        sock.write_all(&buf).await?;
        sock.read_exact(&mut buf).await?;
        if i >= rounds / 10 {
            lat.push(t0.elapsed());
        }
    }
    drop(sock);
    let _ = echo.await;
    Ok(lat)
}

/// 4 KiB writes at successive offsets of a preallocated file, each followed by fdatasync
/// (how a log with preallocated segments appends).
pub fn fdatasync(dir: &Path, rounds: usize) -> Result<Samples> {
    let path = dir.join("fdatasync-floor");
    let mut file = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path)?;
    let block = [0x5au8; 4096];
    for _ in 0..rounds {
        file.write_all(&block)?;
    }
    file.sync_all()?;
    file.seek(SeekFrom::Start(0))?;
    let mut lat = Samples::with_capacity(rounds);
    for _ in 0..rounds {
        let t0 = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        lat.push(t0.elapsed());
    }
    drop(file);
    std::fs::remove_file(&path)?;
    Ok(lat)
}

/// Rounds of a lone durable request, all blocking on threads of their own: 64 bytes sent over
/// loopback TCP, received by a thread that writes 4 KiB at the next offset of a preallocated
/// file and fdatasyncs it, then sends the 64 bytes back.
pub fn durable_round_trip(dir: &Path, rounds: usize) -> Result<Samples> {
    use std::io::Read;
    let path = dir.join("durable-round-trip-floor");
    let mut file = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path)?;
    let block = [0x5au8; 4096];
    let total = rounds + rounds / 10;
    for _ in 0..total {
        file.write_all(&block)?;
    }
    file.sync_all()?;
    file.seek(SeekFrom::Start(0))?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut sock, _) = listener.accept()?;
        sock.set_nodelay(true)?;
        let mut buf = [0u8; 64];
        while sock.read_exact(&mut buf).is_ok() {
            file.write_all(&block)?;
            file.sync_data()?;
            sock.write_all(&buf)?;
        }
        Ok(())
    });
    let mut sock = std::net::TcpStream::connect(addr)?;
    sock.set_nodelay(true)?;
    let mut buf = [7u8; 64];
    let mut lat = Samples::with_capacity(rounds);
    for i in 0..total {
        let t0 = Instant::now();
        sock.write_all(&buf)?;
        sock.read_exact(&mut buf)?;
        if i >= rounds / 10 {
            lat.push(t0.elapsed());
        }
    }
    drop(sock);
    let served = server.join().map_err(|_| crate::sys::Error("the durable round trip's thread panicked".into()))?;
    served?;
    std::fs::remove_file(&path)?;
    Ok(lat)
}

pub async fn measure(dir: &Path, quick: bool) -> Result<Figures> {
    let (rt, fs) = if quick { (2_000, 100) } else { (20_000, 1_000) };
    let mut f = Figures::default();
    f.latency("loopback round trip", &mut loopback(rt).await?);
    let here = dir.to_path_buf();
    let mut sync = tokio::task::spawn_blocking(move || fdatasync(&here, fs))
        .await
        .map_err(|e| crate::sys::Error(format!("fdatasync task: {e}")))??;
    f.latency("4 KiB write+fdatasync", &mut sync);
    let dir = dir.to_path_buf();
    let mut durable = tokio::task::spawn_blocking(move || durable_round_trip(&dir, fs))
        .await
        .map_err(|e| crate::sys::Error(format!("durable round trip task: {e}")))??;
    f.latency("round trip with a 4 KiB write+fdatasync", &mut durable);
    Ok(f)
}
