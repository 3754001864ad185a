//! `ward-contender`: lock and election contenders in an OS process of their own, for the
//! integration tests in `tests/it` (which kill them, and read what they recorded).
//!
//! ```text
//! ward-contender lock  --server A --dir D[,D...] --file F[,F...] [--tasks K] [--iters M]
//!                      [--kind exclusive|rw|semaphore] [--permits N] [--write-every W] [--hold-ms H]
//!     Connects K contenders (one session each), prints "ready" and waits for a line (or EOF)
//!     on stdin; then M times each: lock D, append "enter <token> <pid>/<k>" to F, wait H ms
//!     (default 0), append "exit <token>", unlock. Prints "done <acquisitions> <ms>" at the end.
//!     Several dirs (exclusive only): all of them at once (`lock_all`), one file per dir, each
//!     getting that dir's token. `rw`: iteration i of contender k takes the write side when
//!     (i + k) % W == 0 (W defaults to 4), else the read side; enter lines say
//!     "enter <token> W|R <pid>/<k>". `semaphore`: one of N permits of D.
//! ward-contender hold  --server A --dir D [--session-timeout-ms T] [--owner NAME] [--data BYTES]
//!     Connects (as owner NAME, if given), locks D with BYTES as context, prints
//!     "held <token> <path>", and holds until killed.
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
use ward_client::{Client, LockGuard};

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
    kind: String,
    permits: u32,
    write_every: usize,
    hold: Duration,
    owner: Option<String>,
    data: Vec<u8>,
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
        kind: "exclusive".to_string(),
        permits: 1,
        write_every: 4,
        hold: Duration::ZERO,
        owner: None,
        data: Vec::new(),
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
            "--kind" => args.kind = value.clone(),
            "--permits" => args.permits = number()? as u32,
            "--write-every" => args.write_every = (number()? as usize).max(1),
            "--hold-ms" => args.hold = Duration::from_millis(number()?),
            "--owner" => args.owner = Some(value.clone()),
            "--data" => args.data = value.clone().into_bytes(),
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
    if let Some(owner) = &args.owner {
        builder = builder.owner(owner);
    }
    builder.connect().await.map_err(|e| format!("connect to {}: {e}", args.server))
}

fn record_file(args: &Args) -> Result<File, String> {
    let path = args.file.as_deref().ok_or("--file is required")?;
    open_record(path)
}

fn open_record(path: &str) -> Result<File, String> {
    OpenOptions::new().append(true).create(true).open(path).map_err(|e| format!("open {path}: {e}"))
}

/// What one `lock`-mode iteration asks for.
#[derive(Clone, Copy)]
enum Want {
    Exclusive,
    Rw { write_every: usize },
    Permit(u32),
}

impl Want {
    fn of(args: &Args, dirs: usize) -> Result<Want, String> {
        let want = match args.kind.as_str() {
            "exclusive" => Want::Exclusive,
            "rw" => Want::Rw { write_every: args.write_every },
            "semaphore" => Want::Permit(args.permits),
            other => return Err(format!("unknown --kind {other}")),
        };
        if dirs > 1 && !matches!(want, Want::Exclusive) {
            return Err("several dirs only with --kind exclusive".to_string());
        }
        Ok(want)
    }
}

/// Iteration `i` of contender `k`: takes the lock(s) and returns the guard and, for a
/// read/write lock, the side taken ("R " or "W ").
async fn take(
    client: &Client,
    dirs: &[&str],
    want: Want,
    k: usize,
    i: usize,
) -> Result<(LockGuard, &'static str), String> {
    let taken = match want {
        Want::Exclusive if dirs.len() > 1 => client.lock_all(dirs).await.map(|g| (g, "")),
        Want::Exclusive => client.lock(dirs[0]).await.map(|g| (g, "")),
        Want::Rw { write_every } if (i + k).is_multiple_of(write_every) => {
            client.lock(dirs[0]).await.map(|g| (g, "W "))
        }
        Want::Rw { .. } => client.read_lock(dirs[0]).await.map(|g| (g, "R ")),
        Want::Permit(permits) => client.acquire_permit(dirs[0], permits).await.map(|g| (g, "")),
    };
    taken.map_err(|e| format!("lock {}: {e}", dirs.join(",")))
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
    let dirs: Vec<String> = args.dir.split(',').map(str::to_string).collect();
    let files: Vec<String> = args.file.as_deref().ok_or("--file is required")?.split(',').map(str::to_string).collect();
    if files.len() != dirs.len() {
        return Err(format!("{} dirs but {} files", dirs.len(), files.len()));
    }
    let want = Want::of(args, dirs.len())?;
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
        let (dirs, iters, hold) = (dirs.clone(), args.iters, args.hold);
        let mut records = files.iter().map(|f| open_record(f)).collect::<Result<Vec<_>, _>>()?;
        tasks.spawn(async move {
            let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
            for i in 0..iters {
                let (guard, side) = take(&client, &dirs, want, k, i).await?;
                for (file, fence) in records.iter_mut().zip(guard.fences()) {
                    append(file, format!("enter {} {side}{pid}/{k}\n", fence.token))?;
                }
                if !hold.is_zero() {
                    tokio::time::sleep(hold).await;
                }
                for (file, fence) in records.iter_mut().zip(guard.fences()) {
                    append(file, format!("exit {}\n", fence.token))?;
                }
                guard.unlock().await.map_err(|e| format!("unlock {}: {e}", dirs.join(",")))?;
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
    let guard = client.lock_with_data(&args.dir, &args.data).await.map_err(|e| format!("lock {}: {e}", args.dir))?;
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
