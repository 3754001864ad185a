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
//!                      [--write-on-go P] [--lock-delay-ms L]
//!     Connects (as owner NAME, if given), locks D with BYTES as context (and a lock-delay of
//!     L ms, if given), prints
//!     "held <token> <path>", and holds until killed, or until lost: then prints "lost" and
//!     exits 3. With --write-on-go, once lost it waits for a line (or EOF) on stdin, then
//!     tries a fenced set_data of P with its old fence and prints "fenced <outcome>"; unless
//!     that was "ok" or "stale-fence" it tries again through a new session (the fence is a
//!     token any session can present) and prints that outcome too, then exits 0. An outcome is
//!     "ok <mzxid>", "stale-fence", "session-expired" or "error <what>".
//! ward-contender fenced --server A --dir D --file F --target P --stop-file S
//!                      [--session-timeout-ms T] [--iters M] [--hold-ms H]
//!     A lock loop that outlives failovers. Connects, prints "ready" and waits for a line (or
//!     EOF) on stdin; then, until S exists (at most M iterations): lock D, append
//!     "enter <token> <pid> <contender path>" to F, set P's data to the token with a fenced
//!     write (retried for up to 30 s while its outcome is unknown, even after the lock is
//!     reported lost) and append its outcome ("wrote <token> <mzxid>", "refused <token>" or
//!     "unknown <token> <why>"), wait H ms, append "exit <token>" and unlock; then try the
//!     same fenced write again with the released fence and append
//!     "stale <token> refused|accepted <mzxid>|unknown <why>".
//!     If the guard reports the lock lost while it is held, "lost <token>" is appended the
//!     moment it does and takes the place of the exit line. Failed acquires are retried (on
//!     a new session once the old one is over). Prints "done <acquisitions> <ms>" at the end.
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
use ward_client::{Client, Error, Fence, LockGuard, LockKind, LockOptions, Stat};

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
    target: Option<String>,
    stop_file: Option<String>,
    lock_delay: Option<Duration>,
}

fn parse() -> Result<Args, String> {
    let mut words = std::env::args().skip(1);
    let mode = words.next().ok_or("no mode (lock, hold, elect, fenced)")?;
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
        target: None,
        stop_file: None,
        lock_delay: None,
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
            "--write-on-go" | "--target" => args.target = Some(value.clone()),
            "--stop-file" => args.stop_file = Some(value.clone()),
            "--lock-delay-ms" => args.lock_delay = Some(Duration::from_millis(number()?)),
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
            "fenced" => fenced_loop(&args).await,
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

/// Waits for a line (or EOF) on stdin.
async fn wait_for_go() -> Result<(), String> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    })
    .await
    .map_err(|e| format!("waiting for go: {e}"))
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
    wait_for_go().await?;
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
    let options = args.lock_delay.map_or_else(LockOptions::new, |d| LockOptions::new().lock_delay(d));
    let guard = client
        .acquire_with(&[&args.dir], LockKind::Exclusive, &args.data, &options)
        .await
        .map_err(|e| format!("lock {}: {e}", args.dir))?;
    say(format!("held {} {}", guard.fencing_token(), guard.path()))?;
    guard.lost().await;
    say("lost".to_string())?;
    let Some(target) = &args.target else { return Ok(3) };
    // A paused holder resumed: it still has its fence, and tries to use it when told.
    wait_for_go().await?;
    let fence = guard.fence();
    let data = b"from the old holder";
    let outcome = client.set_data_fenced(&fence, target, data, None).await;
    say(format!("fenced {}", fenced_outcome(&outcome)))?;
    if !matches!(outcome, Ok(_) | Err(Error::StaleFence)) {
        // No answer from the fence (the session is over, or the connection): the fence is
        // checked by the server, whoever presents it, so present it through a new session.
        let fresh = connect(args).await?;
        let outcome = fenced_write_retrying(&fresh, &fence, target, data).await;
        say(format!("fenced {}", fenced_outcome(&outcome)))?;
        let _ = fresh.close().await;
    }
    Ok(0)
}

fn fenced_outcome(outcome: &Result<Stat, Error>) -> String {
    match outcome {
        Ok(stat) => format!("ok {}", stat.mzxid),
        Err(Error::StaleFence) => "stale-fence".to_string(),
        Err(Error::SessionExpired) => "session-expired".to_string(),
        Err(e) => format!("error {e}"),
    }
}

/// Connects, retrying for a while: in the middle of a failover no member may take clients.
async fn connect_retrying(args: &Args) -> Result<Client, String> {
    let mut tries = 0;
    loop {
        match connect(args).await {
            Ok(client) => return Ok(client),
            Err(e) if tries < 5 => {
                tries += 1;
                eprintln!("ward-contender fenced: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn fenced_loop(args: &Args) -> Result<u8, String> {
    let target = args.target.as_deref().ok_or("--target is required")?;
    let stop = std::path::Path::new(args.stop_file.as_deref().ok_or("--stop-file is required")?);
    let mut file = record_file(args)?;
    let mut client = connect_retrying(args).await?;
    say("ready".to_string())?;
    wait_for_go().await?;
    let pid = std::process::id();
    let start = Instant::now();
    let mut acquisitions = 0;
    for _ in 0..args.iters {
        if stop.exists() {
            break;
        }
        if client.state().is_terminal() {
            client = connect_retrying(args).await?;
        }
        let guard = match client.lock(&args.dir).await {
            Ok(guard) => guard,
            Err(e) => {
                // Unavailable while the ensemble elects, or the session is over: try again.
                eprintln!(
                    "ward-contender fenced {pid}: lock {} (session {}): {e}; retrying",
                    args.dir,
                    client.session_id()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        acquisitions += 1;
        let fence = guard.fence();
        append(&mut file, format!("enter {} {pid} {}\n", fence.token, fence.path))?;
        held_section(&client, &guard, target, args.hold, &mut file).await?;
        // A release that cannot be applied (no leader for good) would hang the loop; the
        // session then expires and frees the lock anyway.
        let released = tokio::time::timeout(Duration::from_secs(30), guard.unlock()).await;
        if !matches!(released, Ok(Ok(()))) {
            eprintln!("ward-contender fenced {pid}: unlock {}: {released:?}", args.dir);
            continue;
        }
        // Released: a write with this fence is now stale and must be refused.
        let line = match client.set_data_fenced(&fence, target, b"stale", None).await {
            Err(Error::StaleFence) => format!("stale {} refused\n", fence.token),
            Ok(stat) => format!("stale {} accepted {}\n", fence.token, stat.mzxid),
            Err(e) => format!("stale {} unknown {e}\n", fence.token),
        };
        append(&mut file, line)?;
    }
    let _ = client.close().await;
    say(format!("done {acquisitions} {}", start.elapsed().as_millis()))?;
    Ok(0)
}

/// Sets `target` to `data` under `fence`, again while the outcome is unknown (the
/// connection dropped, no leader yet) for up to 30 s, as a holder that must get its write
/// through would: even once its guard reports the lock lost, so the fence has to refuse it
/// if someone else holds the lock by then.
async fn fenced_write_retrying(client: &Client, fence: &Fence, target: &str, data: &[u8]) -> Result<Stat, Error> {
    let start = Instant::now();
    loop {
        match client.set_data_fenced(fence, target, data, None).await {
            Err(Error::ConnectionLoss | Error::Unavailable) if start.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            outcome => return outcome,
        }
    }
}

/// The fenced write of one held section, with the line that ends the section: "lost" the
/// moment the guard reports the lock lost (even while the write is in flight), else "exit".
async fn held_section(
    client: &Client,
    guard: &LockGuard,
    target: &str,
    hold: Duration,
    file: &mut File,
) -> Result<(), String> {
    let fence = guard.fence();
    let work = async {
        let outcome = fenced_write_retrying(client, &fence, target, fence.token.to_string().as_bytes()).await;
        if !hold.is_zero() {
            tokio::time::sleep(hold).await;
        }
        outcome
    };
    tokio::pin!(work);
    let mut lost = false;
    let outcome = loop {
        tokio::select! {
            biased;
            () = guard.lost(), if !lost => {
                append(file, format!("lost {}\n", fence.token))?;
                lost = true;
            }
            outcome = &mut work => break outcome,
        }
    };
    let line = match outcome {
        Ok(stat) => format!("wrote {} {}\n", fence.token, stat.mzxid),
        Err(Error::StaleFence) => format!("refused {}\n", fence.token),
        Err(e) => format!("unknown {} {e}\n", fence.token),
    };
    append(file, line)?;
    if !lost {
        // No await between the check and the append: the connection task (on this same
        // thread) cannot doubt the session in between.
        let end = if guard.is_lost() { "lost" } else { "exit" };
        append(file, format!("{end} {}\n", fence.token))?;
    }
    Ok(())
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
