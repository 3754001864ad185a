//! What no coordination service can beat on this machine: a loopback TCP round trip and one
//! 4 KiB write + fdatasync.

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

pub async fn measure(dir: &Path, quick: bool) -> Result<Figures> {
    let (rt, fs) = if quick { (2_000, 100) } else { (20_000, 1_000) };
    let mut f = Figures::default();
    f.latency("loopback round trip", &mut loopback(rt).await?);
    let dir = dir.to_path_buf();
    let mut sync = tokio::task::spawn_blocking(move || fdatasync(&dir, fs))
        .await
        .map_err(|e| crate::sys::Error(format!("fdatasync task: {e}")))??;
    f.latency("4 KiB write+fdatasync", &mut sync);
    Ok(f)
}
