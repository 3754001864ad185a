//! `ward-contender`: lock and election contenders in an OS process of their own, for the
//! integration tests in `tests/it` (which kill them, and read what they recorded).
//!
//! ```text
//! ward-contender lock  --server A --dir D --file F [--tasks K] [--iters M]
//!     Connects K contenders (one session each), prints "ready" and waits for a line (or EOF)
//!     on stdin; then M times each: lock D, append "enter <token> <pid>/<k>" and
//!     "exit <token>" to F, unlock. Prints "done <acquisitions> <ms>" at the end.
//! ward-contender hold  --server A --dir D [--session-timeout-ms T]
//!     Locks D, prints "held <token> <path>", and holds until killed.
//! ward-contender elect --server A --dir D --file F --id NAME [--session-timeout-ms T] [--tick-ms N]
//!     Campaigns with NAME; once leader, prints "lead <token>", appends "lead <token> NAME" to F
//!     and then "tick <token>" every N ms until killed. Exits 3 if leadership is lost.
//! ```
//!
//! F is opened with O_APPEND and every line is one write, so lines from many processes
//! interleave whole, in the order they happened.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use ward_client::Client;

struct Args {
    mode: String,
    server: String,
    dir: String,
    file: Option<String>,
    tasks: usize,
    iters: usize,
    session_timeout: Option<Duration>,
    id: String,
    tick: Duration,
}

fn parse() -> Result<Args, String> {
    let mut words = std::env::args().skip(1);
    let mode = words.next().ok_or("no mode (lock, hold, elect)")?;
    let mut args = Args {
        mode,
        server: String::new(),
        dir: String::new(),
        file: None,
        tasks: 1,
        iters: 1,
        session_timeout: None,
        id: String::new(),
        tick: Duration::from_millis(20),
    };
    while let Some(flag) = words.next() {
        let value = words.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<u64>().map_err(|_| format!("{flag}: not a number: {value}"));
        match flag.as_str() {
            "--server" => args.server = value.clone(),
            "--dir" => args.dir = value.clone(),
            "--file" => args.file = Some(value.clone()),
            "--tasks" => args.tasks = number()? as usize,
            "--iters" => args.iters = number()? as usize,
            "--session-timeout-ms" => args.session_timeout = Some(Duration::from_millis(number()?)),
            "--id" => args.id = value.clone(),
            "--tick-ms" => args.tick = Duration::from_millis(number()?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("ward-contender: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("ward-contender: runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(async {
        match args.mode.as_str() {
            "lock" => lock_loop(&args).await,
            "hold" => hold(&args).await,
            "elect" => elect(&args).await,
            other => Err(format!("unknown mode {other}")),
        }
    });
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("ward-contender {}: {e}", args.mode);
            ExitCode::from(1)
        }
    }
}

async fn connect(args: &Args) -> Result<Client, String> {
    let mut builder = Client::builder(&args.server).connect_timeout(Duration::from_secs(20));
    if let Some(timeout) = args.session_timeout {
        builder = builder.session_timeout(timeout);
    }
    builder.connect().await.map_err(|e| format!("connect to {}: {e}", args.server))
}

fn record_file(args: &Args) -> Result<File, String> {
    let path = args.file.as_deref().ok_or("--file is required")?;
    OpenOptions::new().append(true).create(true).open(path).map_err(|e| format!("open {path}: {e}"))
}

/// One line, one write(2): O_APPEND makes it land whole at the end of the file.
fn append(file: &mut File, line: String) -> Result<(), String> {
    file.write_all(line.as_bytes()).map_err(|e| format!("append to the record: {e}"))
}

fn say(line: String) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").and_then(|()| out.flush()).map_err(|e| format!("stdout: {e}"))
}

async fn lock_loop(args: &Args) -> Result<u8, String> {
    let mut clients = Vec::with_capacity(args.tasks);
    for _ in 0..args.tasks {
        clients.push(connect(args).await?);
    }
    say("ready".to_string())?;
    // Every process connects first and then all start together, so that they contend.
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    })
    .await
    .map_err(|e| format!("waiting for go: {e}"))?;
    let pid = std::process::id();
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (k, client) in clients.into_iter().enumerate() {
        let (dir, iters) = (args.dir.clone(), args.iters);
        let mut file = record_file(args)?;
        tasks.spawn(async move {
            for _ in 0..iters {
                let guard = client.lock(&dir).await.map_err(|e| format!("lock {dir}: {e}"))?;
                let token = guard.fencing_token();
                append(&mut file, format!("enter {token} {pid}/{k}\n"))?;
                append(&mut file, format!("exit {token}\n"))?;
                guard.unlock().await.map_err(|e| format!("unlock {dir}: {e}"))?;
            }
            client.close().await.map_err(|e| format!("close: {e}"))
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| format!("contender task: {e}"))??;
    }
    say(format!("done {} {}", args.tasks * args.iters, start.elapsed().as_millis()))?;
    Ok(0)
}

async fn hold(args: &Args) -> Result<u8, String> {
    let client = connect(args).await?;
    let guard = client.lock(&args.dir).await.map_err(|e| format!("lock {}: {e}", args.dir))?;
    say(format!("held {} {}", guard.fencing_token(), guard.path()))?;
    guard.lost().await;
    say("lost".to_string())?;
    Ok(3)
}

async fn elect(args: &Args) -> Result<u8, String> {
    let mut file = record_file(args)?;
    let client = connect(args).await?;
    let election = client.election(&args.dir);
    say("campaigning".to_string())?;
    let leadership = election.campaign(args.id.as_bytes()).await.map_err(|e| format!("campaign: {e}"))?;
    let token = leadership.fencing_token();
    append(&mut file, format!("lead {token} {}\n", args.id))?;
    say(format!("lead {token}"))?;
    let mut ticks = tokio::time::interval(args.tick);
    loop {
        tokio::select! {
            _ = leadership.lost() => {
                say("lost".to_string())?;
                return Ok(3);
            }
            // Checked before every tick, so no tick follows a loss that `lost()` reports.
            _ = ticks.tick() => if !leadership.is_lost() {
                append(&mut file, format!("tick {token}\n"))?;
            },
        }
    }
}
