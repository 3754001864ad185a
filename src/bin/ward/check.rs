//! `ward check`: the command line onto `ward::check`'s runner, on a runtime of its own
//! (multi-threaded: the workers keep running while a fault blocks on a process).

use crate::cli::{CheckArgs, CheckFault, CheckWorkload};
use crate::commands::Failure;
use crate::output::{warn, Out};
use std::time::Duration;
use ward::check::{Config, FaultKind, Target, Workload};

pub fn run(args: CheckArgs, out: Out) -> Result<u8, Failure> {
    let seed = args.seed.unwrap_or_else(clock_seed);
    let target = match (args.ensemble, args.servers) {
        (Some(members), _) => {
            let server_binary = ward_procs::locate::server_binary_beside()
                .map_err(|e| Failure::Check(ward::check::CheckError::Harness(e)))?;
            Target::Ensemble { members, server_binary }
        }
        (None, Some(addrs)) => Target::Servers { addrs, admin: args.admin },
        // clap requires one of the two.
        (None, None) => return Err(Failure::Usage("give --ensemble N or --servers ADDR,...".into())),
    };
    let dir =
        args.out.unwrap_or_else(|| std::env::temp_dir().join(format!("ward-check-{}-{seed}", std::process::id())));
    let workloads = match args.workload.contains(&CheckWorkload::All) {
        true => Workload::ALL.to_vec(),
        false => args
            .workload
            .iter()
            .filter_map(|w| match w {
                CheckWorkload::Registers => Some(Workload::Registers),
                CheckWorkload::Locks => Some(Workload::Locks),
                CheckWorkload::Sessions => Some(Workload::Sessions),
                CheckWorkload::Watches => Some(Workload::Watches),
                CheckWorkload::Sequential => Some(Workload::Sequential),
                CheckWorkload::All => None,
            })
            .collect(),
    };
    let faults = match args.nemesis.contains(&CheckFault::All) {
        true => FaultKind::ALL.to_vec(),
        false => args
            .nemesis
            .iter()
            .filter_map(|f| match f {
                CheckFault::Kill => Some(FaultKind::Kill),
                CheckFault::Pause => Some(FaultKind::Pause),
                CheckFault::Partition => Some(FaultKind::Partition),
                CheckFault::OneWay => Some(FaultKind::OneWay),
                CheckFault::Bridge => Some(FaultKind::Bridge),
                CheckFault::Restart => Some(FaultKind::Restart),
                CheckFault::Member => Some(FaultKind::Member),
                CheckFault::All | CheckFault::None => None,
            })
            .collect(),
    };
    let config = Config {
        target,
        duration: Duration::from_secs(args.duration),
        seed,
        workloads,
        faults,
        out: dir,
        svg: args.svg,
        server_args: args.server_arg,
    };
    warn(format!("check: seed {seed}; history in {}", config.out.display()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Check(ward::check::CheckError::Io { path: "tokio runtime".into(), source: e }))?;
    let say = |line: &str| warn(format!("check: {line}"));
    let report = runtime.block_on(ward::check::run(&config, &say)).map_err(Failure::Check)?;
    // The servers are stopped with the runtime's tasks; the report comes last.
    drop(runtime);
    match out.json() {
        true => out.value(&report.json())?,
        false => out.line(&report.text())?,
    }
    match report.passed() {
        true => Ok(0),
        false => Err(Failure::CheckFailed),
    }
}

/// A seed for a run that was given none: printed, so the run can be repeated.
fn clock_seed() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (now.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32)) % 1_000_000
}
